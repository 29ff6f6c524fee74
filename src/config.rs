//! Which MCP servers to run: the Claude-Desktop-style config file (or the built-in default) resolved
//! into [`ServerSpec`]s, with `${env:VAR}` substituted and unknown keys reported as warnings. The
//! same file may name a remote engine (`"engine"`, see [`EngineSpec`]).
//!
//! Only reading and validation happen here; `mcp.rs` starts what this describes.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// Per-call timeout when a server does not set `timeoutSecs`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// Name of the server in the built-in default configuration.
pub const VAULT_SERVER: &str = "vault";

/// The hidden `recall` subcommand that serves the bundled vault server over stdio.
pub const VAULT_SUBCOMMAND: &str = "mcp-vault-server";

/// What every configured server inherits from recall's own environment: the variables the
/// official MCP SDK clients pass on POSIX. Everything else (cloud keys, `HF_TOKEN`,
/// `SSH_AUTH_SOCK`, …) stays with recall unless the config's `env` or `inheritEnv` names it.
pub const DEFAULT_INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// What the bundled vault server inherits: where its caches live and its log filter; it runs
/// this very binary by absolute path, so it needs not even `PATH`.
pub const VAULT_INHERITED_ENV: &[&str] = &["HOME", "XDG_CACHE_HOME", "RUST_LOG"];

/// One MCP server to spawn over stdio, fully resolved (no `${env:..}` left).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// The key under `mcpServers`; used for logs, status and `server__tool` prefixes.
    pub name: String,
    /// Program to run.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for the child on top of what it inherits (the config's `env`).
    pub env: BTreeMap<String, String>,
    /// Names of recall's own variables the child inherits when set: [`DEFAULT_INHERITED_ENV`]
    /// plus the config's `inheritEnv`. Nothing else of recall's environment reaches it.
    pub inherit_env: Vec<String>,
    /// If set, only these tools are exposed.
    pub allowed_tools: Option<Vec<String>>,
    /// Tools never exposed (applied after `allowed_tools`).
    pub excluded_tools: Vec<String>,
    /// True when the server's tools cannot change anything, so calls need no approval.
    pub read_only: bool,
    /// Limit for each call (starting the server gets at least `mcp::MIN_STARTUP_TIMEOUT`).
    pub timeout: Duration,
}

impl ServerSpec {
    /// A spec with the defaults a config entry gets: the default inherited variables and no
    /// others, all tools, not read-only, 30 s.
    pub fn new(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        ServerSpec {
            name: name.into(),
            command: command.into(),
            args,
            env: BTreeMap::new(),
            inherit_env: DEFAULT_INHERITED_ENV
                .iter()
                .map(|v| v.to_string())
                .collect(),
            allowed_tools: None,
            excluded_tools: Vec::new(),
            read_only: false,
            timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECS),
        }
    }

    /// Whether the allow/exclude lists let `tool` through.
    pub fn allows(&self, tool: &str) -> bool {
        let allowed = self
            .allowed_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool));
        allowed && !self.excluded_tools.iter().any(|t| t == tool)
    }

    /// The child's whole environment: each inherited variable that `lookup` finds (recall's
    /// environment in real use), then `env` on top. The child starts from this and nothing else.
    pub fn child_env(
        &self,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> BTreeMap<String, OsString> {
        let mut vars: BTreeMap<String, OsString> = self
            .inherit_env
            .iter()
            .filter_map(|name| Some((name.clone(), lookup(name)?)))
            .collect();
        for (name, value) in &self.env {
            vars.insert(name.clone(), value.into());
        }
        vars
    }
}

/// Where a [`ServersConfig`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// Read from this file.
    File(PathBuf),
    /// No file: the bundled vault server alone.
    BuiltIn,
}

/// Something in a config file that was ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// The file it was found in.
    pub path: PathBuf,
    /// The server entry holding the key, or `None` at the top level.
    pub server: Option<String>,
    /// The ignored key.
    pub key: String,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.server {
            Some(server) => write!(
                f,
                "{}: ignoring unknown key \"{}\" in server \"{server}\"",
                self.path.display(),
                self.key
            ),
            None => write!(
                f,
                "{}: ignoring unknown top-level key \"{}\"",
                self.path.display(),
                self.key
            ),
        }
    }
}

/// A llama-server to run the model on, from the config file's
/// `"engine": {"url": "http://gpu-box:8080", "apiKey": "${env:GPU_BOX_KEY}"}`.
#[derive(Clone, PartialEq, Eq)]
pub struct EngineSpec {
    /// The server's address.
    pub url: String,
    /// Its API key, `${env:…}` substituted.
    pub api_key: Option<String>,
}

/// Never prints the key.
impl fmt::Debug for EngineSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineSpec")
            .field("url", &self.url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// The servers to run, in file order, plus what was ignored while reading them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServersConfig {
    /// The servers, in the order the file lists them.
    pub servers: Vec<ServerSpec>,
    /// The remote engine the file names, if any.
    pub engine: Option<EngineSpec>,
    /// Ignored keys (each was also logged with `tracing::warn!`).
    pub warnings: Vec<ConfigWarning>,
    /// The file read, or the built-in default.
    pub source: ConfigSource,
}

/// Why no server configuration could be produced.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists (or was named) but could not be read.
    #[error("cannot read config {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not JSON, or JSON of the wrong shape; line and column are 1-based.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What serde_json said.
        message: String,
    },
    /// `${env:VAR}` named a variable that is not set.
    #[error(
        "{}: {server} uses ${{env:{var}}}, but environment variable {var} is not set",
        path.display()
    )]
    MissingEnvVar {
        /// The file.
        path: PathBuf,
        /// The entry using it (`server "name"`, or `"engine"`).
        server: String,
        /// The variable's name.
        var: String,
    },
    /// Well-formed JSON whose values make no sense (empty command, zero timeout, ...).
    #[error("{}: {server}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The entry (`server "name"`, or `"engine"`).
        server: String,
        /// What is wrong.
        message: String,
    },
    /// No config file and no vault directory to run the built-in server on.
    #[error(
        "no MCP server configured: pass --vault DIR (or set RECALL_VAULT), or write a config file \
         (--config FILE, or {})",
        default_hint.display()
    )]
    NoVault {
        /// Where a config file would have been looked for.
        default_hint: PathBuf,
    },
    /// The vault directory for the built-in server does not exist.
    #[error("vault directory {} does not exist or is not a directory", path.display())]
    VaultNotFound {
        /// The directory given.
        path: PathBuf,
    },
    /// A path that must be passed as a UTF-8 argument is not UTF-8.
    #[error("path {} is not valid UTF-8", path.display())]
    NonUtf8Path {
        /// The path.
        path: PathBuf,
    },
    /// The path of the running `recall` binary is unknown, so it cannot spawn itself.
    #[error("cannot locate the recall executable to start the bundled vault server: {0}")]
    CurrentExe(#[source] std::io::Error),
}

/// Resolves the servers to run: `explicit` file, else the user config file if it exists, else
/// the bundled vault server on `vault` (searching by meaning with `embedding_model`, if given).
pub fn load(
    explicit: Option<&Path>,
    vault: Option<&Path>,
    embedding_model: Option<&Path>,
) -> Result<ServersConfig, ConfigError> {
    let default_file = default_config_path();
    let file = match explicit {
        Some(path) => Some(path.to_path_buf()),
        None => default_file.clone().filter(|p| p.is_file()),
    };
    match file {
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            parse(&text, &path, &|var| std::env::var(var).ok())
        }
        None => match vault {
            Some(vault) => builtin(vault, embedding_model),
            None => Err(ConfigError::NoVault {
                default_hint: default_file
                    .unwrap_or_else(|| PathBuf::from("~/.config/recall/config.json")),
            }),
        },
    }
}

/// `recall/config.json` in the platform config folder (`dirs::config_dir`): on Linux
/// `$XDG_CONFIG_HOME` when it is absolute (the XDG spec says a relative one is invalid), else
/// `$HOME/.config`; `~/Library/Application Support` on macOS.
pub fn default_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|dir| dir.join("recall").join("config.json"))
}

/// The built-in default: the bundled vault server, run as a child of this very binary.
pub fn builtin(vault: &Path, embedding_model: Option<&Path>) -> Result<ServersConfig, ConfigError> {
    let exe = std::env::current_exe().map_err(ConfigError::CurrentExe)?;
    let mut config = builtin_for(&exe, vault)?;
    if let Some(model) = embedding_model {
        // Absolute, like the vault: the child does not depend on our working directory.
        let model = std::path::absolute(model).unwrap_or_else(|_| model.to_path_buf());
        let model = model.to_str().ok_or_else(|| ConfigError::NonUtf8Path {
            path: model.clone(),
        })?;
        let args = &mut config.servers[0].args;
        args.push("--embedding-model".into());
        args.push(model.into());
    }
    Ok(config)
}

/// The built-in default with the `recall` binary at `exe`, searching by words alone (tests
/// pass the built binary, since their own executable is the test harness).
pub fn builtin_for(exe: &Path, vault: &Path) -> Result<ServersConfig, ConfigError> {
    if !vault.is_dir() {
        return Err(ConfigError::VaultNotFound {
            path: vault.to_path_buf(),
        });
    }
    // Absolute, so the child does not depend on our working directory.
    let vault = std::path::absolute(vault).map_err(|_| ConfigError::VaultNotFound {
        path: vault.to_path_buf(),
    })?;
    let utf8 = |p: &Path| {
        p.to_str()
            .map(str::to_owned)
            .ok_or_else(|| ConfigError::NonUtf8Path {
                path: p.to_path_buf(),
            })
    };
    let mut spec = ServerSpec::new(
        VAULT_SERVER,
        utf8(exe)?,
        vec![VAULT_SUBCOMMAND.into(), "--vault".into(), utf8(&vault)?],
    );
    spec.read_only = true;
    spec.inherit_env = VAULT_INHERITED_ENV.iter().map(|v| v.to_string()).collect();
    Ok(ServersConfig {
        servers: vec![spec],
        engine: None,
        warnings: Vec::new(),
        source: ConfigSource::BuiltIn,
    })
}

/// Parses config `text` read from `path` (used in messages only); `env` looks variables up.
pub fn parse(
    text: &str,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServersConfig, ConfigError> {
    let parse_error = |e: serde_json::Error| ConfigError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: strip_position(&e.to_string()),
    };
    // Two passes: the untyped one finds unknown keys; the typed one (which ignores them) reports
    // shape errors at their exact position, which `#[serde(flatten)]` would lose.
    let value: Value = serde_json::from_str(text).map_err(parse_error)?;
    let raw: RawFile = serde_json::from_str(text).map_err(parse_error)?;
    let warnings = unknown_keys(&value, path);
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    let servers = raw
        .mcp_servers
        .0
        .into_iter()
        .map(|(name, server)| resolve_server(name, server, path, env))
        .collect::<Result<Vec<_>, _>>()?;
    let engine = raw
        .engine
        .map(|engine| resolve_engine(engine, path, env))
        .transpose()?;
    Ok(ServersConfig {
        servers,
        engine,
        warnings,
        source: ConfigSource::File(path.to_path_buf()),
    })
}

const TOP_LEVEL_KEYS: &[&str] = &["mcpServers", "engine"];
const ENGINE_KEYS: &[&str] = &["url", "apiKey"];
const SERVER_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "inheritEnv",
    "allowedTools",
    "excludedTools",
    "readOnly",
    "timeoutSecs",
];

/// Keys this reader does not know, in file order (serde_json keeps order here).
fn unknown_keys(value: &Value, path: &Path) -> Vec<ConfigWarning> {
    let warning = |server: Option<&str>, key: &str| ConfigWarning {
        path: path.to_path_buf(),
        server: server.map(str::to_owned),
        key: key.to_owned(),
    };
    let mut warnings = Vec::new();
    let Some(top) = value.as_object() else {
        return warnings;
    };
    for key in top.keys().filter(|k| !TOP_LEVEL_KEYS.contains(&k.as_str())) {
        warnings.push(warning(None, key));
    }
    let servers = top.get("mcpServers").and_then(Value::as_object);
    for (name, server) in servers.into_iter().flatten() {
        let keys = server.as_object().into_iter().flat_map(|o| o.keys());
        for key in keys.filter(|k| !SERVER_KEYS.contains(&k.as_str())) {
            warnings.push(warning(Some(name), key));
        }
    }
    let engine = top.get("engine").and_then(Value::as_object);
    for key in engine.into_iter().flat_map(|o| o.keys()) {
        if !ENGINE_KEYS.contains(&key.as_str()) {
            warnings.push(warning(None, &format!("engine.{key}")));
        }
    }
    warnings
}

fn resolve_server(
    name: String,
    raw: RawServer,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerSpec, ConfigError> {
    let invalid = |message: &str| ConfigError::Invalid {
        path: path.to_path_buf(),
        server: format!("server \"{name}\""),
        message: message.to_owned(),
    };
    if name.is_empty() {
        return Err(invalid("server names must not be empty"));
    }
    let subst = |s: &str| {
        substitute(s, env).map_err(|var| ConfigError::MissingEnvVar {
            path: path.to_path_buf(),
            server: format!("server \"{name}\""),
            var,
        })
    };
    let subst_all = |list: &[String]| list.iter().map(|s| subst(s)).collect::<Result<Vec<_>, _>>();

    let command = subst(&raw.command)?;
    if command.trim().is_empty() {
        return Err(invalid("\"command\" is empty"));
    }
    let timeout_secs = raw.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if timeout_secs == 0 {
        return Err(invalid("\"timeoutSecs\" must be at least 1"));
    }
    let env_vars = raw
        .env
        .iter()
        .map(|(k, v)| Ok((k.clone(), subst(v)?)))
        .collect::<Result<BTreeMap<_, _>, ConfigError>>()?;
    if let Some(bad) = raw
        .inherit_env
        .iter()
        .find(|v| v.is_empty() || v.contains('='))
    {
        return Err(invalid(&format!(
            "\"inheritEnv\" lists {bad:?}, which is not an environment variable name"
        )));
    }
    let mut inherit_env: Vec<String> = DEFAULT_INHERITED_ENV
        .iter()
        .map(|v| v.to_string())
        .collect();
    for name in &raw.inherit_env {
        if !inherit_env.contains(name) {
            inherit_env.push(name.clone());
        }
    }
    Ok(ServerSpec {
        command,
        args: subst_all(&raw.args)?,
        env: env_vars,
        inherit_env,
        allowed_tools: raw.allowed_tools.as_deref().map(subst_all).transpose()?,
        excluded_tools: subst_all(&raw.excluded_tools)?,
        read_only: raw.read_only,
        timeout: Duration::from_secs(timeout_secs),
        name,
    })
}

fn resolve_engine(
    raw: RawEngine,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<EngineSpec, ConfigError> {
    let subst = |s: &str| {
        substitute(s, env).map_err(|var| ConfigError::MissingEnvVar {
            path: path.to_path_buf(),
            server: "\"engine\"".to_string(),
            var,
        })
    };
    let url = subst(&raw.url)?;
    if url.trim().is_empty() {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            server: "\"engine\"".to_string(),
            message: "\"url\" is empty".to_string(),
        });
    }
    Ok(EngineSpec {
        url,
        api_key: raw
            .api_key
            .as_deref()
            .map(subst)
            .transpose()?
            .filter(|key| !key.is_empty()),
    })
}

/// Replaces every `${env:VAR}` in `s`; `Err(VAR)` names the first unset variable. Text that only
/// looks like the start of a reference (no closing brace) is kept as is.
pub fn substitute(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    const OPEN: &str = "${env:";
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some(end) = after.find('}') else { break };
        let var = &after[..end];
        out.push_str(&rest[..start]);
        out.push_str(&env(var).ok_or_else(|| var.to_owned())?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// serde_json appends " at line L column C"; the error variant carries those separately.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(rename = "mcpServers")]
    mcp_servers: OrderedServers,
    #[serde(default)]
    engine: Option<RawEngine>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEngine {
    url: String,
    api_key: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    inherit_env: Vec<String>,
    allowed_tools: Option<Vec<String>>,
    #[serde(default)]
    excluded_tools: Vec<String>,
    #[serde(default)]
    read_only: bool,
    timeout_secs: Option<u64>,
}

/// `mcpServers` in file order (a map type would sort or need another dependency).
struct OrderedServers(Vec<(String, RawServer)>);

impl<'de> Deserialize<'de> for OrderedServers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OrderedServers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object mapping server names to {\"command\": ..., \"args\": [...]}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedServers, A::Error> {
                let mut servers: Vec<(String, RawServer)> = Vec::new();
                while let Some((name, server)) = map.next_entry::<String, RawServer>()? {
                    if servers.iter().any(|(n, _)| *n == name) {
                        return Err(de::Error::custom(format!(
                            "duplicate server name \"{name}\""
                        )));
                    }
                    servers.push((name, server));
                }
                Ok(OrderedServers(servers))
            }
        }
        deserializer.deserialize_map(V)
    }
}
