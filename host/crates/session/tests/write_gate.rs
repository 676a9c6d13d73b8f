//! The write gate holds for every intent and phase, and every refusal's
//! advice names a call the session accepts at that moment: each piece of
//! advice is followed on a fresh copy of the session and must not be refused
//! for the phase, the intent or a closed session.

mod common;

use std::collections::BTreeMap;

use code_intel_session::workflow::{HypothesisInput, UnderstandingInput};
use code_intel_session::{Intent, Outcome, SessionError, Workflow};
use common::{Fixture, explore_login, start, tool, understanding};
use serde_json::{Value, json};

/// Session tools whose acceptance depends on the phase, intent or state.
const GATED_TOOLS: &[&str] = &[
    "start_session",
    "set_query_frame",
    "submit_understanding",
    "submit_semantic",
    "submit_verification",
    "add_explored_files",
    "revert_to_exploration",
    "record_outcome",
    "check_write_target",
];

const PRECISE: &str = "When the password is empty the login form shows no error; add a check to the login form.";

fn precise_frame() -> Value {
    json!({
        "target_feature": {"value": "login", "quote": "login"},
        "trigger_condition": {"value": "password is empty", "quote": "When the password is empty"},
        "observed_issue": {"value": "no error shown", "quote": "shows no error"},
        "desired_action": {"value": "add a check", "quote": "add a check to the login form"},
    })
}

/// Where a session can stand.
#[derive(Clone, Copy, Debug)]
enum Scenario {
    ExplorationWithoutFrame,
    Exploration,
    Semantic,
    Verification,
    Ready,
    Closed,
    Question,
    InvestigateReady,
}

const ALL: &[Scenario] = &[
    Scenario::ExplorationWithoutFrame,
    Scenario::Exploration,
    Scenario::Semantic,
    Scenario::Verification,
    Scenario::Ready,
    Scenario::Closed,
    Scenario::Question,
    Scenario::InvestigateReady,
];

fn precise_ready(w: &Workflow, intent: Intent) -> String {
    let sid = start(w, intent, PRECISE);
    w.set_query_frame(&sid, &precise_frame()).unwrap();
    tool(w, &sid, "find_definitions", json!({"symbol": "LoginForm"}), common::defs(&[("LoginForm", "app/forms.py"), ("LoginView", "app/views.py"), ("LoginService", "app/auth.py")])).unwrap();
    tool(w, &sid, "find_references", json!({"symbol": "LoginForm"}), json!({"references": [{"file": "app/views.py", "line": 2}]})).unwrap();
    let sub = understanding(&["LoginForm", "LoginView", "LoginService"], &["LoginView"], &["app/forms.py", "app/views.py"], &["forms validate in clean()"]);
    let r = w.submit_understanding(&sid, &sub).unwrap();
    assert_eq!(r["next_phase"], "READY", "{r:#}");
    sid
}

fn to_semantic(w: &Workflow) -> String {
    let sid = start(w, Intent::Modify, "Fix the login.");
    w.set_query_frame(&sid, &json!({"target_feature": {"value": "login", "quote": "login"}, "desired_action": {"value": "fix", "quote": "Fix"}})).unwrap();
    explore_login(w, &sid);
    let sub = understanding(
        &["LoginService", "LoginView", "LoginForm", "LoginSession"],
        &["LoginView", "LoginService"],
        &["app/auth.py", "app/views.py", "app/forms.py", "app/session.py"],
        &["services raise on bad input"],
    );
    let r = w.submit_understanding(&sid, &sub).unwrap();
    assert_eq!(r["next_phase"], "SEMANTIC", "{r:#}");
    sid
}

fn set_up(w: &Workflow, scenario: Scenario) -> String {
    match scenario {
        Scenario::ExplorationWithoutFrame => start(w, Intent::Modify, PRECISE),
        Scenario::Exploration => {
            let sid = start(w, Intent::Modify, PRECISE);
            w.set_query_frame(&sid, &precise_frame()).unwrap();
            explore_login(w, &sid);
            sid
        }
        Scenario::Semantic => to_semantic(w),
        Scenario::Verification => {
            let sid = to_semantic(w);
            tool(w, &sid, "semantic_search", json!({"query": "login rate limit"}), json!({"results": [{"name": "LoginThrottle", "file": "app/throttle.py", "score": 0.8}]})).unwrap();
            let h = [HypothesisInput { symbol: "LoginThrottle".into(), file: Some("app/throttle.py".into()), line: Some(1), description: None }];
            let r = w.submit_semantic(&sid, &h, "no_definition_found").unwrap();
            assert_eq!(r["next_phase"], "VERIFICATION", "{r:#}");
            sid
        }
        Scenario::Ready => precise_ready(w, Intent::Modify),
        Scenario::Closed => {
            let sid = precise_ready(w, Intent::Modify);
            w.record_outcome(&sid, Outcome::Partial, "stopped", None).unwrap();
            sid
        }
        Scenario::Question => {
            let sid = start(w, Intent::Question, "What does the login form check?");
            // Read the file the way an agent answering the question would.
            tool(w, &sid, "get_function_at_line", json!({"path": "app/forms.py", "line": 1}), json!({"file": "app/forms.py", "content": "class LoginForm"})).unwrap();
            tool(w, &sid, "analyze_structure", json!({"path": "app"}), json!({"files": [{"path": "app/forms.py"}], "path": "app"})).unwrap();
            sid
        }
        Scenario::InvestigateReady => precise_ready(w, Intent::Investigate),
    }
}

/// Follows one piece of advice on `sid`: `Err` when the session refuses it
/// for its phase, its intent or because it is closed.
fn follow(w: &Workflow, sid: &str, advice: &str) -> Result<(), String> {
    let none = BTreeMap::new();
    let result = match advice {
        "start_session" => w.start_session(Intent::Modify, PRECISE).map(drop),
        "set_query_frame" => w.set_query_frame(sid, &precise_frame()).map(drop),
        "submit_understanding" => w.submit_understanding(sid, &UnderstandingInput::default()).map(drop),
        "submit_semantic" => w.submit_semantic(sid, &[], "no_definition_found").map(drop),
        "submit_verification" => w.submit_verification(sid, &[], &none, &BTreeMap::new()).map(drop),
        "add_explored_files" => w.add_explored_files(sid, &["app/forms.py".into()]).map(drop),
        "revert_to_exploration" => w.revert_to_exploration(sid, true).map(drop),
        "record_outcome" => w.record_outcome(sid, Outcome::Success, "done", None).map(drop),
        "check_write_target" => w.check_write_target(sid, "app/forms.py").map(drop),
        other => panic!("advice names {other}, which this test cannot follow"),
    };
    match result {
        Err(e @ (SessionError::WrongPhase { .. } | SessionError::ReadOnlySession { .. } | SessionError::Closed(_) | SessionError::OutcomeRecorded { .. })) => {
            Err(e.to_string())
        }
        _ => Ok(()),
    }
}

/// The first gated session tool a piece of advice names, if any.
fn first_tool(text: &str) -> Option<&'static str> {
    GATED_TOOLS.iter().filter_map(|t| text.find(t).map(|at| (at, *t))).min().map(|(_, t)| t)
}

/// Every piece of advice a session in `scenario` gives, with where it came
/// from. Calls that could change the session run on a fresh copy each.
fn advice(scenario: Scenario) -> Vec<(String, &'static str)> {
    let fx = Fixture::new();
    let w = fx.open();
    let sid = set_up(&w, scenario);
    let (w, sid) = (&w, sid.as_str());
    let mut out = Vec::new();
    for path in ["app/forms.py", "README.md", "app/brand_new.py", "docs/new.md"] {
        let d = w.check_write_target(sid, path).unwrap();
        if d["allowed"] == true {
            continue;
        }
        for option in d["recovery_options"].as_array().unwrap() {
            let name = option["tool"].as_str().unwrap();
            let known = GATED_TOOLS.iter().find(|t| **t == name).copied().unwrap_or_else(|| panic!("unknown recovery tool {name}"));
            out.push((format!("check_write_target({path}).recovery_options"), known));
        }
        if let Some(t) = d["next_step"].as_str().and_then(first_tool) {
            out.push((format!("check_write_target({path}).next_step"), t));
        }
    }
    for (code_tool, params) in [("semantic_search", json!({"query": "login"})), ("find_definitions", json!({"symbol": "LoginForm"}))] {
        if let Err(refusal) = w.gate_tool(sid, code_tool, &params).unwrap()
            && let Some(t) = first_tool(&refusal.next_allowed_step)
        {
            out.push((format!("{code_tool} refusal"), t));
        }
    }
    if let Some(t) = w.get_session_status(sid).unwrap()["next_step"].as_str().and_then(first_tool) {
        out.push(("get_session_status.next_step".into(), t));
    }
    // Refusals of the phase-bound calls themselves.
    for call in ["submit_understanding", "submit_semantic", "submit_verification", "add_explored_files", "set_query_frame"] {
        let fresh = Fixture::new();
        let w = fresh.open();
        let sid = set_up(&w, scenario);
        if let Err(message) = follow(&w, &sid, call)
            && let Some(next) = message.split("Next:").nth(1)
            && let Some(t) = first_tool(next)
        {
            out.push((format!("{call} refusal"), t));
        }
    }
    out
}

#[test]
fn only_implement_or_modify_in_ready_ever_writes() {
    for scenario in ALL {
        let fx = Fixture::new();
        let w = fx.open();
        let sid = set_up(&w, *scenario);
        // Whatever the session read, it tries to make writable.
        let added = w.add_explored_files(&sid, &["app/forms.py".into(), "app".into()]);
        let allowed: Vec<&str> = ["app/forms.py", "app/brand_new.py"]
            .into_iter()
            .filter(|p| w.check_write_target(&sid, p).unwrap()["allowed"] == true)
            .collect();
        match scenario {
            Scenario::Ready => assert_eq!(allowed, vec!["app/forms.py", "app/brand_new.py"], "{scenario:?}"),
            Scenario::Question | Scenario::InvestigateReady => {
                let e = added.unwrap_err();
                assert_eq!(e.code(), "read_only_session", "{scenario:?}: {e}");
                assert!(allowed.is_empty(), "{scenario:?} allowed {allowed:?}");
                let d = w.check_write_target(&sid, "app/forms.py").unwrap();
                assert!(d["reason"].as_str().unwrap().contains("never writes"), "{d:#}");
            }
            _ => assert!(allowed.is_empty(), "{scenario:?} allowed {allowed:?}"),
        }
    }
}

#[test]
fn every_refusal_recommends_only_what_the_session_accepts() {
    let mut checked = 0;
    for scenario in ALL {
        let pieces = advice(*scenario);
        assert!(!pieces.is_empty() || matches!(scenario, Scenario::Ready), "{scenario:?} gave no advice");
        for (source, tool_name) in pieces {
            // Followed on a fresh copy of the session: advice is tried, not read.
            let fresh = Fixture::new();
            let w = fresh.open();
            let sid = set_up(&w, *scenario);
            if let Err(refused) = follow(&w, &sid, tool_name) {
                panic!("{scenario:?}: {source} recommends {tool_name}, which the session refuses: {refused}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} pieces of advice were checked");
}

#[test]
fn exploration_refusal_recommends_neither_add_explored_files_nor_revert() {
    let fx = Fixture::new();
    let w = fx.open();
    let sid = set_up(&w, Scenario::Exploration);
    let d = w.check_write_target(&sid, "app/forms.py").unwrap();
    assert_eq!(d["allowed"], false);
    let tools: Vec<&str> = d["recovery_options"].as_array().unwrap().iter().map(|o| o["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, vec!["submit_understanding"], "{d:#}");
}
