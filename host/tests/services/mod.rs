//! Real services the integration tests start themselves: the OpenAI-compatible
//! embeddings stand-in (`tests/standin/embeddings_server.py`), a PostgreSQL
//! server with pgvector (`scripts/pg`) and a TLS front for it
//! (`tests/standin/pg_tls_front.py`). Each is stopped when its guard drops.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// Copies the directory tree `from` to `to` (a checkout at another path).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The Python of the test environment (`CODE_INTEL_PY_ENV`, default
/// `~/.cache/code-intel/venv`, which scripts/test sets up with numpy,
/// tokenizers and pgserver).
pub fn python() -> PathBuf {
    let env = std::env::var_os("CODE_INTEL_PY_ENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
                .join(".cache/code-intel/venv")
        });
    let python = env.join("bin/python");
    assert!(
        python.exists(),
        "{} does not exist: run scripts/test (it creates the test Python environment), or set CODE_INTEL_PY_ENV to a venv with tests/e2e/requirements.txt installed",
        python.display()
    );
    python
}

/// A running embeddings stand-in.
pub struct Standin {
    child: Child,
    /// `http://127.0.0.1:PORT/v1`
    pub base_url: String,
}

impl Standin {
    /// Starts the stand-in serving the model in `model_dir` with extra
    /// arguments (`--api-key`, `--fail-first`, `--max-batch`, `--delay-ms`).
    pub fn start(model_dir: &std::path::Path, args: &[&str]) -> Self {
        let script = repo_root().join("tests/standin/embeddings_server.py");
        let mut child = Command::new(python())
            .arg(&script)
            .arg("--model-dir")
            .arg(model_dir)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the embeddings stand-in starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(url) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            panic!(
                "the embeddings stand-in did not start (printed {line:?}); does the test Python have numpy and tokenizers?"
            );
        };
        Self {
            child,
            base_url: format!("{url}/v1"),
        }
    }

    /// The stand-in's counters (`requests`, `inputs`, `failed`, `unauthorized`, `too_large`).
    pub fn stats(&self) -> serde_json::Value {
        let url = self.base_url.trim_end_matches("/v1").to_string() + "/stats";
        let out = Command::new(python())
            .args(["-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())", &url])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).expect("stats are JSON")
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running PostgreSQL server with pgvector (`scripts/pg start`), stopped
/// and deleted on drop.
pub struct Postgres {
    pub dir: PathBuf,
    /// `postgres://code_intel:<password>@127.0.0.1:<port>/code_intel` (owner of the database, no superuser).
    pub url: String,
    /// The superuser's URL, for what a test does behind the store's back.
    pub superuser_url: String,
}

impl Postgres {
    pub fn start() -> Self {
        let out = Command::new("bash")
            .arg(repo_root().join("scripts/pg"))
            .arg("start")
            .env(
                "CODE_INTEL_PY_ENV",
                python().parent().unwrap().parent().unwrap(),
            )
            .stderr(Stdio::inherit())
            .output()
            .expect("scripts/pg runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "scripts/pg start failed: {text}");
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("scripts/pg printed no {name}: {text}"))
                .to_string()
        };
        Self {
            dir: PathBuf::from(field("PG_DIR")),
            url: field("PG_URL"),
            superuser_url: field("PG_SUPERUSER_URL"),
        }
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    /// Runs SQL as the superuser with the server's own psql; returns its output.
    pub fn psql(&self, sql: &str) -> String {
        let out = Command::new(self.dir.join("site/pgserver/pginstall/bin/psql"))
            .args([
                "-X",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                &self.superuser_url,
                "-c",
                sql,
            ])
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(repo_root().join("scripts/pg"))
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

/// What a [`TlsFront`] does with a client's request for TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontMode {
    /// TLS, and clients that do not ask for it are dropped: a connection
    /// through the front that works was encrypted.
    TlsOnly,
    /// The SSLRequest answered `N`, the connection relayed unencrypted (a
    /// server with `ssl = off`).
    RefuseTls,
    /// TLS when asked, unencrypted otherwise (a server with `ssl = on`
    /// that also accepts unencrypted clients).
    TlsOrPlain,
}

/// A TLS front for the test PostgreSQL server, which has no TLS of its own
/// (`tests/standin/pg_tls_front.py`): PostgreSQL's SSLRequest answered `S`,
/// TLS with a certificate for `localhost` signed by a CA made at start, the
/// decrypted stream relayed to the server. Killed on drop.
pub struct TlsFront {
    child: Child,
    pub port: u16,
    /// The CA that signed the front's certificate (PEM).
    pub ca: PathBuf,
    /// A CA that signed nothing here (PEM).
    pub other_ca: PathBuf,
}

impl TlsFront {
    /// Starts a front for the server on 127.0.0.1:`upstream_port`, its
    /// certificates made in `cert_dir`.
    pub fn start(upstream_port: u16, cert_dir: &std::path::Path, mode: FrontMode) -> Self {
        let mut command = Command::new(python());
        command
            .arg(repo_root().join("tests/standin/pg_tls_front.py"))
            .arg("--upstream-port")
            .arg(upstream_port.to_string())
            .arg("--cert-dir")
            .arg(cert_dir);
        match mode {
            FrontMode::TlsOnly => {}
            FrontMode::RefuseTls => {
                command.arg("--refuse-tls");
            }
            FrontMode::TlsOrPlain => {
                command.arg("--also-plain");
            }
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the TLS front starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(port) = line
            .trim()
            .strip_prefix("listening on 127.0.0.1:")
            .and_then(|p| p.parse().ok())
        else {
            let _ = child.kill();
            panic!("the TLS front did not start (printed {line:?}); is the openssl command installed?");
        };
        Self {
            child,
            port,
            ca: cert_dir.join("ca.pem"),
            other_ca: cert_dir.join("other-ca.pem"),
        }
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
