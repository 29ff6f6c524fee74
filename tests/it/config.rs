//! The MCP server config: Claude Desktop format, `${env:..}`, unknown keys, errors with positions,
//! file resolution and the built-in default.

use std::path::Path;
use std::time::Duration;

use recall::config::{
    self, ConfigError, ConfigSource, DEFAULT_TIMEOUT_SECS, ServerSpec, VAULT_SERVER,
};

fn env(var: &str) -> Option<String> {
    match var {
        "HOME" => Some("/home/ada".into()),
        "TOKEN" => Some("s3cret".into()),
        _ => None,
    }
}

fn parse(text: &str) -> Result<config::ServersConfig, ConfigError> {
    config::parse(text, Path::new("/etc/recall.json"), &env)
}

#[test]
fn claude_desktop_format_with_recall_extensions() {
    let text = r#"{
      "mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
        "files": {
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-filesystem", "${env:HOME}/notes"],
          "env": {"API_TOKEN": "Bearer ${env:TOKEN}", "PLAIN": "x"},
          "allowedTools": ["read_file", "list_directory"],
          "excludedTools": ["list_directory"],
          "readOnly": true,
          "timeoutSecs": 5
        }
      }
    }"#;
    let cfg = parse(text).unwrap();
    assert_eq!(cfg.source, ConfigSource::File("/etc/recall.json".into()));
    assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
    // File order, not alphabetical.
    let names: Vec<&str> = cfg.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["time", "files"]);

    let time = &cfg.servers[0];
    assert_eq!(
        *time,
        ServerSpec::new(
            "time",
            "mcp-server-time",
            vec!["--local-timezone".into(), "UTC".into()]
        )
    );
    assert!(
        !time.read_only,
        "third-party servers are not read-only by default"
    );
    assert_eq!(time.timeout, Duration::from_secs(DEFAULT_TIMEOUT_SECS));

    let files = &cfg.servers[1];
    assert_eq!(files.args[2], "/home/ada/notes");
    assert_eq!(files.env["API_TOKEN"], "Bearer s3cret");
    assert_eq!(files.env["PLAIN"], "x");
    assert!(files.read_only);
    assert_eq!(files.timeout, Duration::from_secs(5));
    assert!(files.allows("read_file"));
    assert!(
        !files.allows("list_directory"),
        "excluded wins over allowed"
    );
    assert!(!files.allows("write_file"), "not in allowedTools");
    assert!(time.allows("anything"), "no lists: everything allowed");
}

#[test]
fn env_substitution() {
    let sub = |s: &str| config::substitute(s, &env);
    assert_eq!(
        sub("${env:HOME}/x/${env:TOKEN}").unwrap(),
        "/home/ada/x/s3cret"
    );
    assert_eq!(
        sub("no refs, $HOME, ${HOME}").unwrap(),
        "no refs, $HOME, ${HOME}"
    );
    assert_eq!(
        sub("unterminated ${env:HOME").unwrap(),
        "unterminated ${env:HOME"
    );
    assert_eq!(sub("${env:NOPE}").unwrap_err(), "NOPE");
}

#[test]
fn missing_env_var_names_it_and_the_server() {
    let text =
        r#"{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"T": "${env:GITHUB_TOKEN}"}}}}"#;
    let err = parse(text).unwrap_err();
    match &err {
        ConfigError::MissingEnvVar { path, server, var } => {
            assert_eq!(path, Path::new("/etc/recall.json"));
            assert_eq!(server, "server \"gh\"");
            assert_eq!(var, "GITHUB_TOKEN");
        }
        other => panic!("wrong error: {other:?}"),
    }
    assert!(err.to_string().contains("GITHUB_TOKEN is not set"), "{err}");
}

#[test]
fn unknown_keys_are_warnings() {
    let text = r#"{
      "globalShortcut": "Ctrl+Space",
      "mcpServers": {
        "a": {"command": "a", "type": "stdio", "disabled": false}
      }
    }"#;
    let cfg = parse(text).unwrap();
    let found: Vec<(Option<&str>, &str)> = cfg
        .warnings
        .iter()
        .map(|w| (w.server.as_deref(), w.key.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (None, "globalShortcut"),
            (Some("a"), "type"),
            (Some("a"), "disabled")
        ]
    );
    assert_eq!(
        cfg.warnings[1].to_string(),
        "/etc/recall.json: ignoring unknown key \"type\" in server \"a\""
    );
    assert_eq!(cfg.servers.len(), 1);
}

#[test]
fn malformed_json_names_file_line_and_column() {
    let text = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}";
    let err = parse(text).unwrap_err();
    let ConfigError::Parse {
        path, line, column, ..
    } = &err
    else {
        panic!("wrong error: {err:?}")
    };
    assert_eq!(path, Path::new("/etc/recall.json"));
    assert_eq!((*line, *column), (3, 26));
    assert!(
        err.to_string().starts_with("/etc/recall.json:3:26: "),
        "{err}"
    );
}

#[test]
fn wrong_shapes_are_errors_with_positions() {
    let cases: &[(&str, usize, &str)] = &[
        // (text, line, what the message mentions)
        ("{\"mcpServers\": {\"a\": {\"args\": []}}}", 1, "command"),
        (
            "{\n\"mcpServers\": {\"a\": {\"command\": \"x\",\n \"args\": \"-v\"}}}",
            3,
            "sequence",
        ),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeoutSecs\": -1}}}",
            1,
            "u64",
        ),
        ("{\"mcpServers\": []}", 1, "object mapping server names"),
        ("{\"servers\": {}}", 1, "mcpServers"),
        (
            "{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"a\": {\"command\": \"y\"}}}",
            1,
            "duplicate server name",
        ),
        ("", 1, "EOF"),
    ];
    for (text, want_line, mention) in cases {
        match parse(text) {
            Err(ConfigError::Parse { line, message, .. }) => {
                assert_eq!(line, *want_line, "{text}: {message}");
                assert!(message.contains(mention), "{text}: {message}");
            }
            other => panic!("{text}: expected a parse error, got {other:?}"),
        }
    }
}

#[test]
fn invalid_values_are_errors() {
    for (text, mention) in [
        (r#"{"mcpServers": {"a": {"command": ""}}}"#, "command"),
        (
            r#"{"mcpServers": {"a": {"command": "x", "timeoutSecs": 0}}}"#,
            "timeoutSecs",
        ),
    ] {
        match parse(text) {
            Err(ConfigError::Invalid {
                server, message, ..
            }) => {
                assert_eq!(server, "server \"a\"");
                assert!(message.contains(mention), "{message}");
            }
            other => panic!("{text}: expected Invalid, got {other:?}"),
        }
    }
}

/// The user config file is `recall/config.json` in `$XDG_CONFIG_HOME` when that is absolute,
/// else in `$HOME/.config`: a relative or empty `XDG_CONFIG_HOME` is invalid per the spec and
/// ignored. Asked of the binary, since the lookup reads the process's environment.
#[test]
fn the_user_config_file_follows_xdg() {
    let dir = tempfile::tempdir().unwrap();
    let write_config = |base: &Path, server: &str| {
        std::fs::create_dir_all(base.join("recall")).unwrap();
        let config = serde_json::json!({"mcpServers": {server: {"command": "true"}}});
        std::fs::write(base.join("recall/config.json"), config.to_string()).unwrap();
    };
    let xdg = dir.path().join("xdg");
    let home = dir.path().join("home");
    write_config(&xdg, "from-xdg");
    write_config(&home.join(".config"), "from-home");
    let servers = |xdg_config_home: &std::ffi::OsStr| -> Vec<String> {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_recall"))
            .args(["tools", "--json"])
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", xdg_config_home)
            .env_remove("RECALL_VAULT")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let servers = listed["servers"].as_array().unwrap();
        servers
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(servers(xdg.as_os_str()), ["from-xdg"]);
    assert_eq!(servers("relative".as_ref()), ["from-home"]);
    assert_eq!(servers("".as_ref()), ["from-home"]);
}

#[test]
fn explicit_file_is_read_and_missing_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("servers.json");
    std::fs::write(&file, r#"{"mcpServers": {"t": {"command": "true"}}}"#).unwrap();
    let cfg = config::load(Some(&file), None, None).unwrap();
    assert_eq!(cfg.servers[0].name, "t");
    assert_eq!(cfg.source, ConfigSource::File(file.clone()));

    let missing = dir.path().join("nope.json");
    match config::load(Some(&missing), Some(dir.path()), None) {
        Err(ConfigError::Read { path, .. }) => assert_eq!(path, missing),
        other => panic!("expected Read error, got {other:?}"),
    }
}

#[test]
fn builtin_default_runs_this_binary_on_the_vault() {
    let vault = tempfile::tempdir().unwrap();
    let cfg = config::builtin(vault.path(), None).unwrap();
    assert_eq!(cfg.source, ConfigSource::BuiltIn);
    let [spec] = cfg.servers.as_slice() else {
        panic!("one server expected: {cfg:?}")
    };
    assert_eq!(spec.name, VAULT_SERVER);
    assert_eq!(
        Path::new(&spec.command),
        std::env::current_exe().unwrap().as_path()
    );
    assert_eq!(spec.args[..2], ["mcp-vault-server", "--vault"]);
    assert_eq!(Path::new(&spec.args[2]), vault.path());
    assert!(spec.read_only);
    // The bundled server inherits its cache and log settings, nothing else of recall's.
    assert_eq!(spec.inherit_env, config::VAULT_INHERITED_ENV);
    let lookup = |name: &str| Some(format!("value of {name}").into());
    let child: Vec<String> = spec.child_env(lookup).into_keys().collect();
    assert_eq!(child, ["HOME", "RUST_LOG", "XDG_CACHE_HOME"]);

    match config::builtin(&vault.path().join("absent"), None) {
        Err(ConfigError::VaultNotFound { .. }) => {}
        other => panic!("expected VaultNotFound, got {other:?}"),
    }
}

#[test]
fn servers_inherit_the_sdk_defaults_plus_inherit_env_and_env_on_top() {
    let cfg = parse(
        r#"{"mcpServers": {"a": {"command": "x", "env": {"TOKEN": "t", "PATH": "/only"},
             "inheritEnv": ["LANG", "HOME"]}, "b": {"command": "y"}}}"#,
    )
    .unwrap();
    let (a, b) = (&cfg.servers[0], &cfg.servers[1]);
    assert_eq!(
        a.inherit_env,
        ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG"]
    );
    assert_eq!(b.inherit_env, config::DEFAULT_INHERITED_ENV);
    let recall_env = |name: &str| match name {
        "HOME" => Some("/home/me".into()),
        "PATH" => Some("/usr/bin".into()),
        "LANG" => Some("C.UTF-8".into()),
        "HF_TOKEN" | "AWS_SECRET_ACCESS_KEY" => Some("secret".into()),
        _ => None,
    };
    let child = a.child_env(recall_env);
    let pairs: Vec<(&str, &str)> = child
        .iter()
        .map(|(k, v)| (k.as_str(), v.to_str().unwrap()))
        .collect();
    // Unset defaults are skipped, not set empty; `env` wins over an inherited value.
    assert_eq!(
        pairs,
        [
            ("HOME", "/home/me"),
            ("LANG", "C.UTF-8"),
            ("PATH", "/only"),
            ("TOKEN", "t")
        ]
    );
    let child = b.child_env(recall_env);
    assert!(!child.contains_key("HF_TOKEN") && !child.contains_key("AWS_SECRET_ACCESS_KEY"));

    let err = parse(r#"{"mcpServers": {"a": {"command": "x", "inheritEnv": ["A=B"]}}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("inheritEnv") && err.contains("A=B"), "{err}");
}

/// The same file may name a remote engine; its key comes from the environment and never shows
/// in a debug print (which logs may carry).
#[test]
fn engine_with_its_key_from_the_environment() {
    let text = r#"{
      "mcpServers": {"a": {"command": "x"}},
      "engine": {"url": "http://gpu-box:8080", "apiKey": "${env:TOKEN}", "model": "big"}
    }"#;
    let cfg = parse(text).unwrap();
    let engine = cfg.engine.as_ref().expect("an engine");
    assert_eq!(engine.url, "http://gpu-box:8080");
    assert_eq!(engine.api_key.as_deref(), Some("s3cret"));
    assert!(!format!("{cfg:?}").contains("s3cret"));
    let unknown: Vec<&str> = cfg.warnings.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(unknown, ["engine.model"]);

    let missing = r#"{"mcpServers": {}, "engine": {"url": "http://x", "apiKey": "${env:NOPE}"}}"#;
    let err = parse(missing).unwrap_err().to_string();
    assert!(err.contains("\"engine\" uses ${env:NOPE}"), "{err}");
    let empty = r#"{"mcpServers": {}, "engine": {"url": " "}}"#;
    let err = parse(empty).unwrap_err().to_string();
    assert!(err.contains("\"url\" is empty"), "{err}");
    assert!(parse(r#"{"mcpServers": {}}"#).unwrap().engine.is_none());
}
