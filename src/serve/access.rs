//! Who may call `recall serve`: the API key asked for, the browser origins allowed, and the
//! host names answered. Plain functions of the request's headers; `http.rs` applies them as
//! layers.

use std::net::IpAddr;

use axum::http::{HeaderMap, header};

/// Who may call: the API key asked for (if any) and the origins allowed besides the built-in
/// ones.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Every request must carry `Authorization: Bearer KEY`.
    pub api_key: Option<String>,
    /// Origins allowed besides Obsidian's and loopback's (`--allow-origin`).
    pub extra_origins: Vec<String>,
}

impl Access {
    /// True for a browser origin that may call: Obsidian on the desktop (`app://obsidian.md`)
    /// and on mobile (`capacitor://localhost`), a page on this machine (`http://localhost`,
    /// `127.0.0.1` or `[::1]`, any port), and the ones named by `--allow-origin`.
    pub fn allows_origin(&self, origin: &str) -> bool {
        if matches!(origin, "app://obsidian.md" | "capacitor://localhost")
            || self.extra_origins.iter().any(|o| o == origin)
        {
            return true;
        }
        origin.strip_prefix("http://").is_some_and(names_loopback)
    }

    /// True for a `Host` header this server answers: any, when an API key guards it; else only
    /// a loopback name (`localhost`, `127.0.0.1`, `[::1]`, any port). A page elsewhere whose
    /// name was made to resolve to 127.0.0.1 (DNS rebinding) sends its own name, and is refused.
    pub fn allows_host(&self, host: &str) -> bool {
        self.api_key.is_some() || names_loopback(host)
    }

    /// True when `headers` carry the key, or none is asked for. The comparison takes as long
    /// whatever the first wrong byte (a key guessed byte by byte over the network).
    pub fn authorizes(&self, headers: &HeaderMap) -> bool {
        let Some(key) = &self.api_key else {
            return true;
        };
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        given.len() == key.len()
            && given
                .bytes()
                .zip(key.bytes())
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

/// Whether `host_port` (`HOST` or `HOST:PORT`) names this machine's loopback.
fn names_loopback(host_port: &str) -> bool {
    let host = match host_port.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => host_port,
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether a browser's `origin` is this server's own (the page it served, opened at whatever
/// address it listens on): the host check, which runs first, has already allowed that name.
pub fn is_same_origin(origin: &str, host: Option<&str>) -> bool {
    host.is_some_and(|host| origin.strip_prefix("http://") == Some(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn obsidian_and_local_pages_are_allowed_origins_and_others_are_not() {
        let access = Access {
            api_key: None,
            extra_origins: vec!["https://chat.example.org".into()],
        };
        for origin in [
            "app://obsidian.md",
            "capacitor://localhost",
            "http://localhost",
            "http://localhost:3000",
            "http://127.0.0.1:8080",
            "http://[::1]:5173",
            "https://chat.example.org",
        ] {
            assert!(access.allows_origin(origin), "{origin}");
        }
        for origin in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://10.0.0.5:3000",
            "https://localhost",
            "null",
            "app://obsidian.md.evil",
        ] {
            assert!(!access.allows_origin(origin), "{origin}");
        }
    }

    #[test]
    fn only_the_address_the_page_was_served_at_is_its_own_origin() {
        assert!(is_same_origin(
            "http://192.168.1.5:7322",
            Some("192.168.1.5:7322")
        ));
        assert!(!is_same_origin(
            "http://192.168.1.6:7322",
            Some("192.168.1.5:7322")
        ));
        assert!(!is_same_origin(
            "https://192.168.1.5:7322",
            Some("192.168.1.5:7322")
        ));
        assert!(!is_same_origin("http://192.168.1.5:7322", None));
    }
}
