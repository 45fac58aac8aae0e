//! The daemon's proxy configuration: the keys of a scenario's `[proxy]` table (docs/
//! docs/scenario-reference.md), from a TOML file and `--set proxy.KEY=VALUE` flags, read and checked
//! by the scenario crate so that a key means the same in a simulation and on a router.

use std::fmt;
use std::path::Path;

use millinet_proxy::{Middlebox, PayloadBytes, Proxy};
use millinet_scenario::translate::proxy::milliproxy_config;
use millinet_scenario::{ConfigError, ProxyKind, ProxySpec};

#[derive(Debug)]
pub enum DaemonConfigError {
    /// A file that cannot be read, bad TOML, an unknown key or a value out of range.
    Config(ConfigError),
    /// `kind = "split"` asked for a packet datapath: the split-TCP baseline is a relay of
    /// kernel sockets (`SplitRelay`).
    SplitIsARelay,
    Proxy(millinet_proxy::ProxyConfigError),
}

impl fmt::Display for DaemonConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DaemonConfigError::Config(e) => e.fmt(f),
            DaemonConfigError::SplitIsARelay => f.write_str(
                "proxy.kind = \"split\": the split-TCP baseline relays kernel sockets and has no packet datapath; allowed here: \
                 \"milliproxy\"",
            ),
            DaemonConfigError::Proxy(e) => write!(f, "proxy: {e}"),
        }
    }
}

impl std::error::Error for DaemonConfigError {}

#[derive(Clone, Debug)]
pub struct DaemonConfig {
    pub spec: ProxySpec,
}

impl DaemonConfig {
    /// `file`: a TOML file whose one table is `[proxy]` (None: every key at its default);
    /// `overrides`: `proxy.KEY=VALUE`, applied after the file.
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<DaemonConfig, DaemonConfigError> {
        let (text, name) = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| DaemonConfigError::Config(ConfigError::new(format!("cannot read {}: {e}", path.display()))))?;
                (text, path.display().to_string())
            }
            None => (String::new(), "(defaults)".to_string()),
        };
        let spec = millinet_scenario::load_proxy_text(&text, &name, overrides).map_err(DaemonConfigError::Config)?;
        Ok(DaemonConfig { spec })
    }

    pub fn from_spec(spec: ProxySpec) -> DaemonConfig {
        DaemonConfig { spec }
    }

    /// milliProxy keeping real payload bytes, ready for a `Datapath`. `mss1_bytes`: the MSS
    /// the UE's SYN is clamped to toward the server (the server-side path's MTU − 40), or the
    /// core's default.
    pub fn build(&self, mss1_bytes: Option<u32>) -> Result<Box<dyn Middlebox + Send>, DaemonConfigError> {
        if self.spec.kind == ProxyKind::Split {
            return Err(DaemonConfigError::SplitIsARelay);
        }
        let mut cfg = milliproxy_config(&self.spec);
        cfg.mss1_bytes = mss1_bytes.unwrap_or(cfg.mss1_bytes);
        let proxy: Proxy<PayloadBytes> = Proxy::new(cfg).map_err(DaemonConfigError::Proxy)?;
        Ok(Box::new(proxy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str, overrides: &[&str]) -> Result<DaemonConfig, String> {
        let dir = tempfile_dir();
        let path = dir.join("proxy.toml");
        std::fs::write(&path, text).unwrap();
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        let loaded = DaemonConfig::load(Some(&path), &overrides).map_err(|e| e.to_string().replace(&path.display().to_string(), "FILE"));
        // Tests leave nothing behind in the host's temporary directory.
        std::fs::remove_dir_all(&dir).unwrap();
        loaded
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("millinet-proxyd-config-{}-{:?}", std::process::id(), std::thread::current().id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn without_a_config_the_daemon_runs_the_default_policy_the_study_validated() {
        let c = load("[proxy]\n", &[]).unwrap();
        let s = &c.spec;
        assert_eq!((s.policy.as_str(), s.flow_buffer_bytes), ("calibrated", 40_000_000));
        assert_eq!((s.target_queue_delay_s, s.target_queue_rtt_fraction, s.target_queue_gain), (0.003, 0.15, 0.5));
    }

    #[test]
    fn the_scenario_keys_are_read_and_checked_with_the_place_they_came_from() {
        let c = load("[proxy]\npolicy = \"static\"\nstatic_fw_bytes = 123456\n", &["proxy.mss2_bytes=9000"]).unwrap();
        assert_eq!((c.spec.policy.as_str(), c.spec.static_fw_bytes, c.spec.mss2_bytes), ("static", 123_456, 9000));
        assert!(c.build(None).is_ok());
        assert!(c.build(Some(100)).err().unwrap().to_string().contains("mss1_bytes = 100"));
        let e = load("[proxy]\npolicy = \"bdp\"\n\nmss2_bytes = 50\n", &[]).unwrap_err();
        assert_eq!(e, "FILE: line 4: proxy.mss2_bytes = 50: out of range; allowed: 100..=65000");
        let e = load("[proxy]\n", &["proxy.policy=fastest"]).unwrap_err();
        assert!(e.starts_with("--set proxy.policy=fastest: proxy.policy = \"fastest\""), "{e}");
        let e = load("[proxy]\nbogus = 1\n", &[]).unwrap_err();
        assert!(e.contains("line 2") && e.contains("bogus"), "{e}");
        let e = load("[daemon]\n", &[]).unwrap_err();
        assert!(e.contains("daemon") && e.contains("proxy"), "{e}");
        let e = load("[proxy]\nkind = \"split\"\n", &[]).unwrap().build(None).err().unwrap().to_string();
        assert!(e.contains("proxy.kind = \"split\"") && e.contains("allowed here: \"milliproxy\""), "{e}");
        let e = DaemonConfig::load(Some(Path::new("/nonexistent/proxy.toml")), &[]).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/proxy.toml"), "{e}");
    }
}
