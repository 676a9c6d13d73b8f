//! The test fixture shared by the workflow tests: a temporary repository, a
//! small in-process symbol index and map (the host's real ones are exercised
//! by the host's tests); the workflow, its persistence and its files are real.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use code_intel_session::relevance::LexicalRelevance;
use code_intel_session::services::{Agreement, AgreementMap, MapHit, SymbolIndex, SymbolSite};
use code_intel_session::workflow::UnderstandingInput;
use code_intel_session::{Intent, Services, Workflow, WorkflowConfig};
use serde_json::{Value, json};

pub struct Index(pub Vec<SymbolSite>);

pub fn site(name: &str, qualified: &str, file: &str, start: u32, end: u32) -> SymbolSite {
    SymbolSite {
        name: name.into(),
        qualified_name: Some(qualified.into()),
        kind: "class".into(),
        file: file.into(),
        start_line: start,
        end_line: end,
    }
}

impl SymbolIndex for Index {
    fn definitions(&self, symbol: &str) -> Result<Vec<SymbolSite>, String> {
        Ok(self
            .0
            .iter()
            .filter(|s| {
                s.name == symbol
                    || s.qualified_name.as_deref() == Some(symbol)
                    || s.qualified_name.as_deref().is_some_and(|q| q.ends_with(&format!(".{symbol}")))
            })
            .cloned()
            .collect())
    }
    fn indexed_files(&self) -> Result<u64, String> {
        Ok(self.0.len() as u64)
    }
}

#[derive(Default)]
pub struct Map(pub Mutex<Vec<(Agreement, String)>>);

impl AgreementMap for Map {
    fn add(&self, a: &Agreement, markdown: &str) -> Result<(), String> {
        let mut entries = self.0.lock().unwrap();
        entries.retain(|(e, _)| e.id != a.id);
        entries.push((a.clone(), markdown.to_string()));
        Ok(())
    }
    fn remove(&self, agreement_id: &str) -> Result<(), String> {
        self.0.lock().unwrap().retain(|(e, _)| e.id != agreement_id);
        Ok(())
    }
    fn search(&self, text: &str, limit: usize) -> Result<Vec<MapHit>, String> {
        let mut hits: Vec<MapHit> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|(a, _)| MapHit {
                agreement_id: a.id.clone(),
                // The best of the agreement's lines (term, request, symbols).
                score: code_intel_session::agreement::map_text(a)
                    .lines()
                    .map(|line| LexicalRelevance::pair(text, line))
                    .fold(0.0, f32::max),
                nl_term: a.nl_term.clone(),
                symbols: a.symbols.iter().map(|s| s.symbol.clone()).collect(),
                files: a.files.clone(),
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(limit);
        Ok(hits)
    }
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub map: Arc<Map>,
    pub index: Arc<Index>,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (f, body) in [
            ("app/auth.py", "class LoginService:\n    def login(self): ...\n"),
            ("app/views.py", "class LoginView:\n    def post(self): ...\n"),
            ("app/forms.py", "class LoginForm:\n    pass\n"),
            ("app/session.py", "class LoginSession:\n    pass\n"),
            ("app/throttle.py", "class LoginThrottle:\n    pass\n"),
            ("app/config.py", "class ConfigLoader:\n    pass\n"),
            ("app/password.py", "class PasswordHasher:\n    pass\n"),
            ("README.md", "readme\n"),
        ] {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let index = Arc::new(Index(vec![
            site("LoginService", "app.auth.LoginService", "app/auth.py", 1, 2),
            site("LoginView", "app.views.LoginView", "app/views.py", 1, 2),
            site("LoginForm", "app.forms.LoginForm", "app/forms.py", 1, 2),
            site("LoginSession", "app.session.LoginSession", "app/session.py", 1, 2),
            site("LoginThrottle", "app.throttle.LoginThrottle", "app/throttle.py", 1, 2),
            site("ConfigLoader", "app.config.ConfigLoader", "app/config.py", 1, 2),
            site("PasswordHasher", "app.password.PasswordHasher", "app/password.py", 1, 2),
        ]));
        Self { dir, map: Arc::new(Map::default()), index }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn open(&self) -> Workflow {
        Workflow::open(
            self.root(),
            WorkflowConfig { learned_pair_ttl_days: 30 },
            Services { relevance: Arc::new(LexicalRelevance), index: self.index.clone(), map: self.map.clone() },
        )
        .unwrap()
    }
}

/// Runs a tool through the gate and records its (synthetic) result.
pub fn tool(w: &Workflow, sid: &str, name: &str, params: Value, result: Value) -> Result<i64, String> {
    match w.gate_tool(sid, name, &params).unwrap() {
        Ok(_) => Ok(w.record_tool_call(sid, name, &params, &result).unwrap()),
        Err(refusal) => Err(refusal.to_string()),
    }
}

pub fn defs(names: &[(&str, &str)]) -> Value {
    json!({"definitions": names.iter().map(|(n, f)| json!({"name": n, "file": f, "line": 1})).collect::<Vec<_>>()})
}

pub fn start(w: &Workflow, intent: Intent, q: &str) -> String {
    w.start_session(intent, q).unwrap()["session_id"].as_str().unwrap().to_string()
}

pub fn understanding(symbols: &[&str], entry: &[&str], files: &[&str], patterns: &[&str]) -> UnderstandingInput {
    UnderstandingInput {
        symbols_identified: symbols.iter().map(|s| code_intel_session::workflow::SymbolClaim::Name((*s).into())).collect(),
        entry_points: entry.iter().map(|s| (*s).to_string()).collect(),
        files_analyzed: files.iter().map(|s| (*s).to_string()).collect(),
        existing_patterns: patterns.iter().map(|s| (*s).to_string()).collect(),
        ..UnderstandingInput::default()
    }
}

pub fn explore_login(w: &Workflow, sid: &str) {
    tool(
        w,
        sid,
        "find_definitions",
        json!({"symbol": "Login"}),
        defs(&[
            ("LoginService", "app/auth.py"),
            ("LoginView", "app/views.py"),
            ("LoginForm", "app/forms.py"),
            ("LoginSession", "app/session.py"),
            ("ConfigLoader", "app/config.py"),
        ]),
    )
    .unwrap();
    tool(w, sid, "find_references", json!({"symbol": "LoginService"}), json!({"references": [{"file": "app/views.py", "line": 2}]}))
        .unwrap();
}

