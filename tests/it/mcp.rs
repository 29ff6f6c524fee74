//! The MCP manager against real servers nobody here wrote (`mcp-server-time` from PyPI,
//! `@modelcontextprotocol/server-everything` from npm) and the bundled vault server, as real child
//! processes. Peers come from `scripts/install-peers`; a missing one fails the test, never skips it.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use recall::config::{self, ServerSpec};
use recall::mcp::{McpManager, ServerStatus};
use recall::tool::ToolHost;
use recall::tool::{ToolCall, ToolOutput};
use serde_json::{Map, Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn time_server(name: &str) -> ServerSpec {
    let bin = common::time_server_bin();
    ServerSpec::new(name, bin, vec!["--local-timezone".into(), "UTC".into()])
}

fn everything_server(name: &str) -> ServerSpec {
    let js = common::everything_server_js();
    ServerSpec::new(name, "node", vec![js, "stdio".into()])
}

fn call(name: &str, arguments: Value) -> ToolCall {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    ToolCall {
        name: name.into(),
        arguments,
    }
}

fn no_args(name: &str) -> ToolCall {
    ToolCall {
        name: name.into(),
        arguments: Map::new(),
    }
}

fn assert_ok(out: &ToolOutput) {
    assert!(!out.is_error, "call failed: {}", out.text);
}

fn status_of(manager: &McpManager, server: &str) -> ServerStatus {
    manager
        .servers()
        .into_iter()
        .find(|s| s.name == server)
        .unwrap_or_else(|| panic!("no server {server}"))
        .status
}

fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -9 {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_of_two_third_party_servers_are_merged_and_routed() {
    let manager = McpManager::start(&[time_server("time"), everything_server("everything")]).await;
    for report in manager.servers() {
        assert_eq!(report.status, ServerStatus::Running, "{}", report.name);
        assert!(report.pid.is_some());
    }
    let names: Vec<String> = manager.tools().into_iter().map(|t| t.name).collect();
    for tool in ["get_current_time", "convert_time", "echo", "get-sum"] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} missing from {names:?}"
        );
    }
    let route = manager.route("get_current_time").unwrap();
    assert_eq!((route.server.as_str(), route.prefixed), ("time", false));
    assert!(!route.read_only);
    let spec = manager
        .tools()
        .into_iter()
        .find(|t| t.name == "convert_time")
        .unwrap();
    assert!(
        spec.parameters().any(|(p, _)| p == "target_timezone"),
        "{spec:?}"
    );

    let now = manager
        .call(&call("get_current_time", json!({"timezone": "UTC"})))
        .await;
    assert_ok(&now);
    assert!(now.text.contains("UTC"), "{}", now.text);

    let echo = manager
        .call(&call("echo", json!({"message": "hello from recall"})))
        .await;
    assert_ok(&echo);
    assert!(echo.text.contains("hello from recall"), "{}", echo.text);

    let sum = manager
        .call(&call("get-sum", json!({"a": 2, "b": 40})))
        .await;
    assert_ok(&sum);
    assert!(sum.text.contains("42"), "{}", sum.text);

    // Calls run in parallel through a shared manager.
    let (echo_one, paris) = (
        call("echo", json!({"message": "one"})),
        call("get_current_time", json!({"timezone": "Europe/Paris"})),
    );
    let (a, b) = tokio::join!(manager.call(&echo_one), manager.call(&paris));
    assert_ok(&a);
    assert_ok(&b);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_kinds_are_converted() {
    let manager = McpManager::start(&[everything_server("everything")]).await;
    let structured = manager
        .call(&call(
            "get-structured-content",
            json!({"location": "Chicago"}),
        ))
        .await;
    assert_ok(&structured);
    let data = structured.structured.expect("structuredContent kept");
    assert!(data.get("temperature").is_some(), "{data}");

    let image = manager.call(&no_args("get-tiny-image")).await;
    assert_ok(&image);
    assert!(image.text.contains("[image: image/png"), "{}", image.text);

    // A schema violation is the server's error result, for the model to read and fix.
    let bad = manager.call(&call("get-sum", json!({"a": "two"}))).await;
    assert!(bad.is_error, "{bad:?}");
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_tool_names_get_server_prefixes() {
    let manager = McpManager::start(&[time_server("t1"), time_server("t2")]).await;
    let mut names: Vec<String> = manager.tools().into_iter().map(|t| t.name).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "t1__convert_time",
            "t1__get_current_time",
            "t2__convert_time",
            "t2__get_current_time"
        ]
    );
    let route = manager.route("t2__get_current_time").unwrap();
    assert_eq!(
        (route.server.as_str(), route.tool.as_str(), route.prefixed),
        ("t2", "get_current_time", true)
    );
    assert!(manager.routed_tools().iter().all(|r| r.route.prefixed));

    let out = manager
        .call(&call("t2__get_current_time", json!({"timezone": "UTC"})))
        .await;
    assert_ok(&out);

    let ambiguous = manager
        .call(&call("get_current_time", json!({"timezone": "UTC"})))
        .await;
    assert!(ambiguous.is_error);
    assert!(
        ambiguous.text.contains("t1__get_current_time")
            && ambiguous.text.contains("t2__get_current_time"),
        "{}",
        ambiguous.text
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tool_lists_available_tools() {
    let manager = McpManager::start(&[time_server("time")]).await;
    let out = manager.call(&no_args("get_weather")).await;
    assert!(out.is_error);
    assert!(
        out.text.contains("unknown tool \"get_weather\""),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("get_current_time, convert_time"),
        "{}",
        out.text
    );
    // The explicit server__tool form also reaches an unprefixed tool.
    let out = manager
        .call(&call("time__get_current_time", json!({"timezone": "UTC"})))
        .await;
    assert_ok(&out);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_and_excluded_tools_filter_and_env_reaches_the_server() {
    let mut everything = everything_server("everything");
    everything.allowed_tools = Some(vec!["echo".into(), "get-env".into(), "get-sum".into()]);
    everything.excluded_tools = vec!["get-sum".into()];
    everything
        .env
        .insert("RECALL_TEST_MARK".into(), "marked-42".into());
    everything.read_only = true;
    let mut time = time_server("time");
    time.excluded_tools = vec!["convert_time".into()];
    let manager = McpManager::start(&[time, everything]).await;

    let names: Vec<String> = manager.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["get_current_time", "echo", "get-env"]);
    assert!(manager.route("echo").unwrap().read_only);

    let blocked = manager
        .call(&call("get-sum", json!({"a": 1, "b": 2})))
        .await;
    assert!(
        blocked.is_error && blocked.text.contains("unknown tool"),
        "{}",
        blocked.text
    );

    let env = manager.call(&no_args("get-env")).await;
    assert_ok(&env);
    assert!(env.text.contains("marked-42"), "{}", env.text);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_servers_are_reported_and_skipped() {
    let missing = ServerSpec::new("missing", "/nonexistent/mcp-server", vec![]);
    let crashing = ServerSpec::new(
        "crashing",
        "sh",
        vec![
            "-c".into(),
            "echo 'fatal: no config for crashing' >&2; exit 3".into(),
        ],
    );
    let silent = ServerSpec::new("silent", "sleep", vec!["60".into()]);
    let manager = McpManager::start(&[missing, time_server("time"), crashing, silent]).await;

    assert_eq!(status_of(&manager, "time"), ServerStatus::Running);
    match status_of(&manager, "missing") {
        ServerStatus::Failed { reason, .. } => {
            assert!(reason.contains("/nonexistent/mcp-server"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    match status_of(&manager, "crashing") {
        ServerStatus::Failed { stderr_tail, .. } => {
            assert_eq!(stderr_tail, ["fatal: no config for crashing"]);
        }
        other => panic!("{other:?}"),
    }
    match status_of(&manager, "silent") {
        ServerStatus::Failed { reason, .. } => {
            assert!(reason.contains("did not start within"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    let names: Vec<String> = manager.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["get_current_time", "convert_time"]);
    assert_ok(
        &manager
            .call(&call("get_current_time", json!({"timezone": "UTC"})))
            .await,
    );
    manager.shutdown().await;
}

/// Polls `recall tools`-style status until `server` leaves the running state.
async fn wait_until_down(manager: &McpManager, server: &str) -> ServerStatus {
    for _ in 0..50 {
        let status = status_of(manager, server);
        if !matches!(status, ServerStatus::Running | ServerStatus::Restarted) {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{server} still reported running 5 s after being killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_killed_while_idle_is_restarted_once() {
    let manager = McpManager::start(&[time_server("time"), everything_server("everything")]).await;
    let now = call("get_current_time", json!({"timezone": "UTC"}));
    assert_ok(&manager.call(&now).await);

    let first_pid = manager.server_pid("time").unwrap();
    kill(first_pid);
    assert!(matches!(
        wait_until_down(&manager, "time").await,
        ServerStatus::Exited { .. }
    ));
    // Its tools stay routed, so the next call reaches it and restarts it; nothing was sent to the
    // dead process, so the call itself just succeeds.
    assert!(manager.route("get_current_time").is_some());
    assert_ok(&manager.call(&now).await);
    assert_eq!(status_of(&manager, "time"), ServerStatus::Restarted);
    let second_pid = manager.server_pid("time").unwrap();
    assert_ne!(first_pid, second_pid);
    // The other server never noticed.
    assert_ok(
        &manager
            .call(&call("echo", json!({"message": "still here"})))
            .await,
    );

    // Only one restart: a second death is final and its tools leave the table.
    kill(second_pid);
    match wait_until_down(&manager, "time").await {
        ServerStatus::Failed { reason, .. } => assert!(reason.contains("again"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let gone = manager.call(&now).await;
    assert!(
        gone.is_error && gone.text.contains("unknown tool"),
        "{}",
        gone.text
    );
    assert!(manager.route("get_current_time").is_none());
    assert_eq!(manager.tools().len(), manager.routed_tools().len());
    assert!(manager.tools().iter().all(|t| t.name != "convert_time"));
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_dying_mid_call_fails_that_call_fast() {
    let manager = std::sync::Arc::new(McpManager::start(&[everything_server("everything")]).await);
    let pid = manager.server_pid("everything").unwrap();
    let slow = {
        let manager = manager.clone();
        tokio::spawn(async move {
            let long = call(
                "trigger-long-running-operation",
                json!({"duration": 20, "steps": 20}),
            );
            manager.call(&long).await
        })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    let killed_at = Instant::now();
    kill(pid);
    let out = slow.await.unwrap();
    assert!(out.is_error, "{out:?}");
    assert!(
        out.text.contains("server \"everything\" stopped"),
        "{}",
        out.text
    );
    assert!(
        killed_at.elapsed() < Duration::from_secs(5),
        "waited for the timeout instead"
    );
    assert!(matches!(
        status_of(&manager, "everything"),
        ServerStatus::Exited { .. }
    ));

    assert_ok(
        &manager
            .call(&call("echo", json!({"message": "back"})))
            .await,
    );
    assert_eq!(status_of(&manager, "everything"), ServerStatus::Restarted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_call_times_out_and_the_server_keeps_working() {
    let mut everything = everything_server("everything");
    everything.timeout = Duration::from_secs(1);
    let manager = McpManager::start(&[everything]).await;
    let started = Instant::now();
    let out = manager
        .call(&call(
            "trigger-long-running-operation",
            json!({"duration": 10, "steps": 2}),
        ))
        .await;
    assert!(out.is_error);
    assert!(out.text.contains("timed out after 1 s"), "{}", out.text);
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_ok(
        &manager
            .call(&call("echo", json!({"message": "still fine"})))
            .await,
    );
    assert_eq!(status_of(&manager, "everything"), ServerStatus::Running);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_every_child() {
    let manager = McpManager::start(&[time_server("time"), everything_server("everything")]).await;
    let pids: Vec<u32> = manager.servers().iter().filter_map(|s| s.pid).collect();
    assert_eq!(pids.len(), 2);
    manager.shutdown().await;
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "child {pid} still exists after shutdown"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundled_vault_server_runs_as_a_child_of_recall_next_to_a_third_party_server() {
    let vault = root().join("tests/fixtures/vault");
    assert!(
        vault.join("Home.md").exists(),
        "fixture vault missing at {}",
        vault.display()
    );
    // The built-in default config, pointed at the built `recall` binary instead of this harness.
    let builtin = config::builtin_for(Path::new(env!("CARGO_BIN_EXE_recall")), &vault).unwrap();
    let [vault_server] = builtin.servers.as_slice() else {
        panic!("{builtin:?}")
    };
    let vault_server = vault_server.clone();
    let manager = McpManager::start(&[vault_server, time_server("time")]).await;
    for report in manager.servers() {
        assert_eq!(report.status, ServerStatus::Running, "{report:?}");
    }
    let names: Vec<String> = manager.tools().into_iter().map(|t| t.name).collect();
    for tool in [
        "search_notes",
        "read_note",
        "list_notes",
        "get_current_time",
    ] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} missing from {names:?}"
        );
    }
    assert!(manager.route("read_note").unwrap().read_only);
    assert!(!manager.route("get_current_time").unwrap().read_only);

    let home = manager
        .call(&call("read_note", json!({"uri": "Home"})))
        .await;
    assert_ok(&home);
    assert!(!home.text.is_empty());
    let hits = manager
        .call(&call("search_notes", json!({"query": "home"})))
        .await;
    assert_ok(&hits);
    assert_ok(
        &manager
            .call(&call("get_current_time", json!({"timezone": "UTC"})))
            .await,
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_drives_the_manager() {
    common::time_server_bin();
    let text = r#"{
      "globalShortcut": "ignored",
      "mcpServers": {
        "clock": {
          "command": "${env:REPO}/.venv-peers/bin/mcp-server-time",
          "args": ["--local-timezone", "UTC"],
          "allowedTools": ["get_current_time"],
          "readOnly": true,
          "timeoutSecs": 5
        }
      }
    }"#;
    let repo = root().to_str().unwrap().to_owned();
    let env = move |var: &str| (var == "REPO").then(|| repo.clone());
    let cfg = config::parse(text, Path::new("config.json"), &env).unwrap();
    assert_eq!(cfg.warnings.len(), 1);
    let manager = McpManager::start(&cfg.servers).await;
    let names: Vec<String> = manager.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["get_current_time"]);
    assert!(manager.route("get_current_time").unwrap().read_only);
    assert_ok(
        &manager
            .call(&call("get_current_time", json!({"timezone": "Asia/Tokyo"})))
            .await,
    );
    manager.shutdown().await;
}

/// Waits (at most 10 s) for `pid` to end; panics if it does not.
async fn assert_ends(pid: u32, what: &str) {
    for _ in 0..100 {
        if !common::running(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} (pid {pid}) is still running");
}

/// A server started through `sh`, which first starts a process of its own and writes its pid
/// to `pid_file`, then runs `then`.
fn server_with_a_child(name: &str, pid_file: &Path, then: &str) -> ServerSpec {
    let script = format!(
        "sleep 300 >/dev/null 2>&1 & echo $! > '{}'; {then}",
        pid_file.display()
    );
    ServerSpec::new(name, "sh", vec!["-c".into(), script])
}

fn read_pid(file: &Path) -> u32 {
    let text = std::fs::read_to_string(file).unwrap();
    text.trim().parse().unwrap_or_else(|_| panic!("{text:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_server_has_its_own_process_group_and_shutdown_ends_all_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let then = format!("exec '{}' --local-timezone UTC", common::time_server_bin());
    let manager = McpManager::start(&[server_with_a_child("time", &pid_file, &then)]).await;
    assert_eq!(status_of(&manager, "time"), ServerStatus::Running);
    let server = manager.server_pid("time").unwrap();
    let child = read_pid(&pid_file);
    let ours = common::stat(std::process::id()).unwrap().pgrp;
    let group = common::stat(server).unwrap().pgrp;
    // Ctrl-C at a terminal signals the foreground group: recall's, never the server's.
    assert_eq!(group, server, "the server leads a group of its own");
    assert_ne!(group, ours);
    assert_eq!(
        common::stat(child).unwrap().pgrp,
        group,
        "its child is in its group"
    );
    assert_ok(
        &manager
            .call(&call("get_current_time", json!({"timezone": "UTC"})))
            .await,
    );
    manager.shutdown().await;
    assert_ends(server, "the server").await;
    assert_ends(child, "the server's own child").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_its_handshake_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    // The shell answers the handshake with garbage and exits; its child would live on.
    let spec = server_with_a_child("broken", &pid_file, "echo 'not JSON-RPC'; exit 1");
    let manager = McpManager::start(&[spec]).await;
    assert!(
        matches!(status_of(&manager, "broken"), ServerStatus::Failed { .. }),
        "{:?}",
        status_of(&manager, "broken")
    );
    assert_ends(read_pid(&pid_file), "the failed server's child").await;
    manager.shutdown().await;
}
