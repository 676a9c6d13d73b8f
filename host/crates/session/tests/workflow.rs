//! The whole state machine against a real SQLite database in a temporary
//! repository. The symbol index and the map are small in-process
//! implementations of the traits (the host's real ones are exercised by the
//! host's tests); the workflow, its persistence and its files are real.

mod common;

use code_intel_session::workflow::{EvidenceInput, HypothesisInput, VerificationEvidence, VerificationInput};
use code_intel_session::relevance::split_symbol;
use code_intel_session::{Intent, Outcome, Phase};
use common::{Fixture, defs, explore_login, start, tool, understanding};
use serde_json::json;

#[test]
fn precise_request_goes_straight_to_ready_and_gates_writes() {
    let fx = Fixture::new();
    let w = fx.open();
    let q = "When the password is empty the login form shows no error; add a check to the login form.";
    let sid = start(&w, Intent::Modify, q);
    let r = w
        .set_query_frame(
            &sid,
            &json!({
                "target_feature": {"value": "login", "quote": "login"},
                "trigger_condition": {"value": "password is empty", "quote": "When the password is empty"},
                "observed_issue": {"value": "no error shown", "quote": "shows no error"},
                "desired_action": {"value": "add a check", "quote": "add a check to the login form"},
            }),
        )
        .unwrap();
    assert_eq!(r["success"], true, "{r:#}");
    assert_eq!(r["risk_level"], "LOW");
    assert_eq!(r["missing_slots"], json!([]));

    // Forest search is refused in EXPLORATION, the map is fine.
    let refused = tool(&w, &sid, "semantic_search", json!({"query": "login"}), json!({})).unwrap_err();
    assert!(refused.contains("EXPLORATION") && refused.contains("Next:"), "{refused}");
    tool(&w, &sid, "semantic_search", json!({"query": "login", "collection": "map"}), json!({"results": []})).unwrap();

    // Submitting before find_references is refused, nothing changes.
    tool(&w, &sid, "find_definitions", json!({"symbol": "LoginForm"}), defs(&[("LoginForm", "app/forms.py"), ("LoginView", "app/views.py"), ("LoginService", "app/auth.py")])).unwrap();
    let sub = understanding(&["LoginForm", "LoginView", "LoginService"], &["LoginView"], &["app/forms.py", "app/views.py"], &["forms validate in clean()"]);
    let r = w.submit_understanding(&sid, &sub).unwrap();
    assert_eq!(r["accepted"], false);
    assert_eq!(r["error"], "required_tools_not_used");
    assert_eq!(r["missing_tools"], json!(["find_references"]));

    tool(&w, &sid, "find_references", json!({"symbol": "LoginForm"}), json!({"references": [{"file": "app/views.py", "line": 2}]})).unwrap();
    let r = w.submit_understanding(&sid, &sub).unwrap();
    assert_eq!(r["accepted"], true, "{r:#}");
    assert_eq!(r["next_phase"], "READY", "{r:#}");
    assert_eq!(r["relevance_method"], "lexical");

    let ok = w.check_write_target(&sid, "app/forms.py").unwrap();
    assert_eq!(ok["allowed"], true);
    let new_file = w.check_write_target(&sid, "app/new_validator.py").unwrap();
    assert_eq!(new_file["allowed"], true, "a new file in an explored directory");
    let blocked = w.check_write_target(&sid, "README.md").unwrap();
    assert_eq!(blocked["allowed"], false);
    let options: Vec<&str> =
        blocked["recovery_options"].as_array().unwrap().iter().map(|o| o["tool"].as_str().unwrap()).collect();
    assert_eq!(options, vec!["add_explored_files", "revert_to_exploration"]);
    // add_explored_files refuses a file no tool read...
    let r = w.add_explored_files(&sid, &["README.md".into()]).unwrap();
    assert_eq!(r["added"], json!([]));
    assert!(r["refused"][0]["why"].as_str().unwrap().contains("read it"));
    // ... and accepts it once read.
    tool(&w, &sid, "get_function_at_line", json!({"path": "README.md", "line": 1}), json!({"file": "README.md", "content": "readme"})).unwrap();
    let r = w.add_explored_files(&sid, &["README.md".into()]).unwrap();
    assert_eq!(r["added"][0]["path"], "README.md");
    assert_eq!(w.check_write_target(&sid, "README.md").unwrap()["allowed"], true);
    assert_eq!(w.check_write_target(&sid, "./app/../README.md").unwrap_err().to_string().contains(".."), true);
    assert!(w.check_write_target(&sid, "/etc/passwd").is_err());
}

#[test]
fn vague_modify_goes_through_semantic_and_verification() {
    let fx = Fixture::new();
    let w = fx.open();
    let sid = start(&w, Intent::Modify, "Fix the login.");
    let r = w
        .set_query_frame(
            &sid,
            &json!({
                "target_feature": {"value": "login", "quote": "login"},
                "desired_action": {"value": "fix", "quote": "Fix"},
                "observed_issue": null,
            }),
        )
        .unwrap();
    assert_eq!(r["risk_level"], "HIGH");
    assert_eq!(r["requirements"]["symbols"], 5);
    let guidance = &r["investigation_guidance"];
    assert_eq!(guidance["missing_slots"][0], "observed_issue");
    assert!(guidance["recommended_tools"].as_array().unwrap().contains(&json!("search_text")));
    assert!(r["plan"]["steps"].as_array().unwrap().len() >= 3);

    explore_login(&w, &sid);
    let search = tool(&w, &sid, "search_text", json!({"pattern": "raise"}), json!({"matches": [{"file": "app/auth.py", "line": 2}]})).unwrap();
    // Four symbols, not enough for HIGH; files and patterns fine; slot evidence for target only.
    let mut sub = understanding(
        &["LoginService", "LoginView", "LoginForm", "LoginSession"],
        &["LoginView", "LoginService"],
        &["app/auth.py", "app/views.py", "app/forms.py", "app/session.py"],
        &["services raise on bad input", "views catch service errors"],
    );
    sub.slot_evidence.insert("target_feature".into(), EvidenceInput { tool: "find_definitions".into(), params: Some(json!({"symbol": "Login"})), result: Some("LoginService in app/auth.py".into()) });
    let r = w.submit_understanding(&sid, &sub).unwrap();
    assert_eq!(r["accepted"], true, "{r:#}");
    assert_eq!(r["next_phase"], "SEMANTIC");
    let kinds: Vec<&str> = r["missing_requirements"].as_array().unwrap().iter().map(|m| m["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["symbols_identified", "slot_evidence:observed_issue"]);
    assert!(search > 0);

    // SEMANTIC: exact tools refused, forest search allowed.
    let refused = tool(&w, &sid, "find_definitions", json!({"symbol": "x"}), json!({})).unwrap_err();
    assert!(refused.contains("SEMANTIC") && refused.contains("submit_semantic"), "{refused}");
    tool(&w, &sid, "semantic_search", json!({"query": "login rate limit"}), json!({"results": [{"name": "LoginThrottle", "file": "app/throttle.py", "score": 0.8}]})).unwrap();
    // A reason that fits nothing missing is refused.
    let h = [HypothesisInput { symbol: "LoginThrottle".into(), file: Some("app/throttle.py".into()), line: Some(1), description: Some("rate limiting of logins".into()) }];
    let r = w.submit_semantic(&sid, &h, "no_reference_found").unwrap();
    assert_eq!(r["error"], "semantic_reason_mismatch");
    assert!(w.submit_semantic(&sid, &h, "because").is_err());
    // A hypothesis no tool returned is refused.
    let bogus = [HypothesisInput { symbol: "Imaginary".into(), file: None, line: None, description: None }];
    assert_eq!(w.submit_semantic(&sid, &bogus, "no_definition_found").unwrap()["error"], "inconsistent_evidence");
    let r = w.submit_semantic(&sid, &h, "no_definition_found").unwrap();
    assert_eq!(r["next_phase"], "VERIFICATION", "{r:#}");
    let hyp_id = r["hypotheses"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(w.check_write_target(&sid, "app/auth.py").unwrap()["allowed"], false);

    // VERIFICATION: forest refused; confirm with an exact tool run after the hypothesis.
    assert!(tool(&w, &sid, "semantic_search", json!({"query": "x"}), json!({})).is_err());
    let early = [VerificationInput { hypothesis: hyp_id.clone(), confirmed: true, evidence: Some(VerificationEvidence { tool: "find_definitions".into(), file: Some("app/throttle.py".into()), line: Some(1), params: None }), note: None }];
    tool(&w, &sid, "find_definitions", json!({"symbol": "LoginThrottle"}), defs(&[("LoginThrottle", "app/throttle.py")])).unwrap();
    let issue_call = tool(&w, &sid, "search_text", json!({"pattern": "too many attempts"}), json!({"matches": [{"file": "app/throttle.py", "line": 2}]})).unwrap();
    assert!(issue_call > 0);
    let mut evidence = std::collections::BTreeMap::new();
    evidence.insert("observed_issue".to_string(), EvidenceInput { tool: "search_text".into(), params: Some(json!({"pattern": "too many attempts"})), result: Some("throttle message never shown".into()) });
    let mut resolved = std::collections::BTreeMap::new();
    resolved.insert("observed_issue".to_string(), Some("lockout message never shown".to_string()));
    let r = w.submit_verification(&sid, &early, &evidence, &resolved).unwrap();
    assert_eq!(r["verdicts"][0]["status"], "FACT", "{r:#}");
    assert_eq!(r["next_phase"], "READY", "{r:#}");
    assert_eq!(w.check_write_target(&sid, "app/throttle.py").unwrap()["allowed"], true);

    let status = w.get_session_status(&sid).unwrap();
    let phases: Vec<&str> = status["history"].as_array().unwrap().iter().map(|h| h["to"].as_str().unwrap()).collect();
    assert_eq!(phases, vec!["SEMANTIC", "VERIFICATION", "READY"]);
}

#[test]
fn hallucinated_quote_and_unrelated_symbol_are_rejected() {
    let fx = Fixture::new();
    let w = fx.open();
    let sid = start(&w, Intent::Modify, "ログイン機能でパスワードが空のときエラーが出ないので修正して");
    let r = w
        .set_query_frame(
            &sid,
            &json!({
                "target_feature": {"value": "ログイン機能", "quote": "ログイン機能で"},
                "observed_issue": {"value": "タイムアウトする", "quote": "タイムアウトする"},
                "trigger_condition": {"value": "パスワードが空", "quote": "パスワードが空のとき"},
                "desired_action": {"value": "ログアウト", "quote": "修正して"},
            }),
        )
        .unwrap();
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "validation_failed");
    let errs: std::collections::BTreeMap<&str, &str> = r["validation_errors"].as_array().unwrap().iter().map(|e| (e["slot"].as_str().unwrap(), e["error"].as_str().unwrap())).collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs["observed_issue"].contains("verbatim"));
    assert!(errs["desired_action"].contains("does not match"));
    // The rejected slots count as missing: MODIFY without observed_issue is HIGH.
    assert_eq!(r["risk_level"], "HIGH");
    assert!(r["missing_slots"].as_array().unwrap().contains(&json!("observed_issue")));

    // An unrelated symbol (< 0.3) is rejected with guidance, in English terms.
    let sid = start(&w, Intent::Modify, "The login form shows no error when the password is empty; add a check.");
    w.set_query_frame(&sid, &json!({
        "target_feature": {"value": "login form", "quote": "The login form"},
        "observed_issue": {"value": "no error", "quote": "shows no error"},
        "desired_action": {"value": "add a check", "quote": "add a check"},
    })).unwrap();
    explore_login(&w, &sid);
    let r = w.validate_symbol_relevance(&sid, None, &["ConfigLoader".into(), "LoginForm".into()], &[], None).unwrap();
    assert_eq!(r["results"][0]["tier"], "rejected");
    assert!(r["results"][0]["reinvestigation_guidance"]["next_actions"].as_array().unwrap().len() >= 2);
    assert_eq!(r["results"][1]["tier"], "fact");
    // Confirming needs code evidence; confirming a rejected symbol is refused.
    let e = w.validate_symbol_relevance(&sid, None, &["LoginForm".into()], &["LoginForm".into()], Some("ok")).unwrap_err();
    assert!(e.to_string().contains("code_evidence"));
    let r = w.validate_symbol_relevance(&sid, None, &["ConfigLoader".into(), "LoginForm".into()], &["ConfigLoader".into(), "LoginForm".into()], Some("LoginForm.clean() validates the password field")).unwrap();
    assert_eq!(r["confirmed"], json!(["LoginForm"]));
    assert_eq!(r["refused_confirmations"][0]["symbol"], "ConfigLoader");

    let sub = understanding(&["LoginForm", "ConfigLoader", "LoginView", "LoginService"], &["LoginView"], &["app/forms.py", "app/views.py"], &["forms validate in clean()"]);
    let r = w.submit_understanding(&sid, &sub).unwrap();
    assert_eq!(r["next_phase"], "SEMANTIC", "{r:#}");
    assert_eq!(r["rejected_symbols"][0]["symbol"], "ConfigLoader");
    assert!(r["missing_requirements"].as_array().unwrap().iter().any(|m| m["kind"] == "nl_symbol_mapping"));
}

#[test]
fn grey_zone_forces_high_and_inconsistent_evidence_is_refused() {
    let fx = Fixture::new();
    let w = fx.open();
    let sid = start(&w, Intent::Modify, "The user login page shows no error when the password is empty; add a check.");
    w.set_query_frame(&sid, &json!({
        "target_feature": {"value": "user login page", "quote": "The user login page"},
        "observed_issue": {"value": "no error", "quote": "shows no error"},
        "desired_action": {"value": "add a check", "quote": "add a check"},
    })).unwrap();
    explore_login(&w, &sid);
    // Files not returned by any tool, entry point not a symbol, duplicates, unknown symbol.
    let bad = understanding(&["LoginForm", "LoginForm", "Nope"], &["LoginThrottle"], &["app/password.py"], &["x"]);
    let r = w.submit_understanding(&sid, &bad).unwrap();
    assert_eq!(r["error"], "inconsistent_evidence");
    let errs = r["errors"].to_string();
    for needle in ["listed twice", "app/password.py", "not one of symbols_identified", "not defined in the index"] {
        assert!(errs.contains(needle), "{needle} in {errs}");
    }
    assert_eq!(w.get_session_status(&sid).unwrap()["phase"], "EXPLORATION");

    // "user login page" vs LoginForm: Dice (1+1)/(2+2) = 0.5 -> grey zone -> HIGH.
    let sub = understanding(&["LoginForm", "LoginView", "LoginService"], &["LoginView"], &["app/forms.py", "app/views.py"], &["forms validate in clean()"]);
    let r = w.submit_understanding(&sid, &sub).unwrap();
    assert_eq!(r["risk_level"], "HIGH", "{r:#}");
    assert_eq!(r["risk_raised"], true);
    assert!(r["warnings"].to_string().contains("grey-zone"));
    assert_eq!(r["next_phase"], "SEMANTIC");
}

#[test]
fn failed_hypothesis_stays_blocked() {
    let fx = Fixture::new();
    let w = fx.open();
    let sid = start(&w, Intent::Modify, "Fix the login.");
    w.set_query_frame(&sid, &json!({"target_feature": {"value": "login", "quote": "login"}, "desired_action": {"value": "fix", "quote": "Fix"}})).unwrap();
    explore_login(&w, &sid);
    let sub = understanding(&["LoginService", "LoginView"], &["LoginView"], &["app/auth.py", "app/views.py"], &[]);
    assert_eq!(w.submit_understanding(&sid, &sub).unwrap()["next_phase"], "SEMANTIC");
    tool(&w, &sid, "semantic_search", json!({"query": "login attempts"}), json!({"results": [{"name": "LoginThrottle", "file": "app/views.py"}]})).unwrap();
    let h = [HypothesisInput { symbol: "LoginThrottle".into(), file: Some("app/views.py".into()), line: Some(1), description: None }];
    let r = w.submit_semantic(&sid, &h, "no_definition_found").unwrap();
    let id = r["hypotheses"][0]["id"].as_str().unwrap().to_string();
    // The agent claims it exists in app/views.py; the index says app/throttle.py.
    tool(&w, &sid, "get_function_at_line", json!({"path": "app/views.py", "line": 1}), json!({"file": "app/views.py", "name": "LoginView"})).unwrap();
    let r = w
        .submit_verification(&sid, &[VerificationInput { hypothesis: id, confirmed: true, evidence: Some(VerificationEvidence { tool: "get_function_at_line".into(), file: Some("app/views.py".into()), line: Some(1), params: None }), note: None }], &Default::default(), &Default::default())
        .unwrap();
    assert_eq!(r["verdicts"][0]["status"], "REJECTED", "{r:#}");
    assert!(r["verdicts"][0]["reason"].as_str().unwrap().contains("app/throttle.py"));
    assert_eq!(r["next_phase"], "VERIFICATION");
    assert_eq!(r["rejected_hypotheses"], json!(["LoginThrottle"]));
    let w2 = w.check_write_target(&sid, "app/views.py").unwrap();
    assert_eq!(w2["allowed"], false);
    assert!(w2["reason"].as_str().unwrap().contains("VERIFICATION"));
    // The way out: back to exploration, keeping results.
    let r = w.revert_to_exploration(&sid, true).unwrap();
    assert_eq!(r["phase"], "EXPLORATION");
    assert_eq!(r["explored_files"], json!(["app/auth.py", "app/views.py"]));
}

#[test]
fn success_writes_agreement_and_map_short_circuits_next_session() {
    let fx = Fixture::new();
    let w = fx.open();
    let sid = start(&w, Intent::Investigate, "How does the login service check passwords?");
    w.set_query_frame(&sid, &json!({"target_feature": {"value": "login service", "quote": "the login service"}})).unwrap();
    tool(&w, &sid, "find_definitions", json!({"symbol": "LoginService"}), defs(&[("LoginService", "app/auth.py")])).unwrap();
    let r = w.submit_understanding(&sid, &understanding(&["LoginService"], &[], &["app/auth.py"], &[])).unwrap();
    assert_eq!(r["next_phase"], "READY", "{r:#}");
    let r = w.record_outcome(&sid, Outcome::Success, "explained the password check", None).unwrap();
    let path = r["agreement"]["path"].as_str().unwrap();
    let md = std::fs::read_to_string(fx.root().join(path)).unwrap();
    assert!(md.contains("LoginService") && md.contains("login service"), "{md}");
    assert_eq!(r["map"], "added");
    assert_eq!(r["learned_pairs"]["added"], 1);
    assert_eq!(fx.map.0.lock().unwrap().len(), 1);
    // The session is closed: writes refused, no longer the active session.
    assert_eq!(w.check_write_target(&sid, "app/auth.py").unwrap()["allowed"], false);
    assert_eq!(w.active_session().unwrap(), None);

    // A similar request: the map hint is offered at once.
    let r = w.start_session(Intent::Investigate, "login service").unwrap();
    assert_eq!(r["map_hints"][0]["symbols"], json!(["LoginService"]), "{r:#}");
    let sid2 = r["session_id"].as_str().unwrap().to_string();
    // Learned pair: the cached match is shown, and it scores as learned.
    let r = w.validate_symbol_relevance(&sid2, Some("login service"), &["LoginService".into()], &[], None).unwrap();
    assert_eq!(r["cached_matches"][0]["symbol"], "LoginService");

    // Analysis and insights.
    w.record_outcome(&sid2, Outcome::Failure, "gave up", Some(Phase::Exploration)).unwrap();
    let a = w.get_session_analysis(&sid2).unwrap();
    assert_eq!(a["analysis"]["final_outcome"], "failure");
    assert_eq!(a["analysis"]["failure_point"]["phase"], "EXPLORATION");
    let i = w.get_improvement_insights(10).unwrap();
    assert_eq!(i["total_sessions_with_outcomes"], 2);
    assert_eq!(i["risk_level_correlation"]["LOW"]["failures"], 1);
    assert_eq!(i["common_failure_points"]["EXPLORATION"], 1);
    let a = w.get_session_analysis(&sid).unwrap();
    assert_eq!(a["analysis"]["final_outcome"], "success");
    assert_eq!(a["agreements"].as_array().unwrap().len(), 1);
    assert_eq!(a["decision"]["intent"], "INVESTIGATE");
    assert_eq!(split_symbol("LoginService"), "Login Service");
}

/// A client that lost the answer of `record_outcome` (a crash, a timeout)
/// retries it: the retry writes nothing (no second agreement file, row, map
/// entry, outcome or learned pair) and answers what was recorded. Another
/// outcome on the closed session is refused, except `failure`, which takes
/// the success back whole: learned pairs, agreement row, file and map entry.
#[test]
fn record_outcome_on_a_closed_session_is_recorded_once() {
    let fx = Fixture::new();
    let w = fx.open();
    let sid = start(&w, Intent::Investigate, "How does the login service check passwords?");
    w.set_query_frame(&sid, &json!({"target_feature": {"value": "login service", "quote": "the login service"}})).unwrap();
    tool(&w, &sid, "find_definitions", json!({"symbol": "LoginService"}), defs(&[("LoginService", "app/auth.py")])).unwrap();
    assert_eq!(w.submit_understanding(&sid, &understanding(&["LoginService"], &[], &["app/auth.py"], &[])).unwrap()["next_phase"], "READY");
    let first = w.record_outcome(&sid, Outcome::Success, "explained the password check", None).unwrap();
    let id = first["agreement"]["id"].as_str().unwrap().to_string();
    assert_eq!(id, format!("agr-{}", sid.strip_prefix("ses-").unwrap()), "one agreement per session, named after it");
    let agreements_dir = fx.root().join(".code-intel/agreements");
    let files = || std::fs::read_dir(&agreements_dir).map_or(0, |d| d.filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "md")).count());
    assert_eq!(files(), 1);

    for _ in 0..2 {
        let again = w.record_outcome(&sid, Outcome::Success, "explained the password check", None).unwrap();
        assert_eq!(again["already_recorded"], true, "{again:#}");
        assert_eq!(again["outcome_id"], first["outcome_id"]);
        assert_eq!(again["agreement"]["id"], first["agreement"]["id"]);
        assert_eq!(again["agreement"]["symbols"], first["agreement"]["symbols"]);
    }
    let a = w.get_session_analysis(&sid).unwrap();
    assert_eq!(a["outcomes"].as_array().unwrap().len(), 1, "{a:#}");
    assert_eq!(a["agreements"].as_array().unwrap().len(), 1);
    assert_eq!((files(), fx.map.0.lock().unwrap().len()), (1, 1));

    let refused = w.record_outcome(&sid, Outcome::Partial, "half", None).unwrap_err();
    assert_eq!(refused.code(), "session_closed");
    assert!(refused.to_string().contains("closed with outcome `success`") && refused.to_string().contains("start_session"), "{refused}");

    // The change broke something after all: the failure takes the success back.
    let r = w.validate_symbol_relevance(&start(&w, Intent::Investigate, "login service"), Some("login service"), &["LoginService".into()], &[], None).unwrap();
    assert_eq!(r["cached_matches"][0]["symbol"], "LoginService", "the success taught a learned pair");
    let failed = w.record_outcome(&sid, Outcome::Failure, "the check was wrong", None).unwrap();
    assert_eq!(failed["replaces_outcome"], "success", "{failed:#}");
    assert_eq!(failed["agreements_retracted"], json!([id]));
    assert_eq!(failed["learned_pairs_dropped"], 1);
    assert_eq!((files(), fx.map.0.lock().unwrap().len()), (0, 0));
    let a = w.get_session_analysis(&sid).unwrap();
    assert_eq!(a["agreements"], json!([]));
    assert_eq!(a["analysis"]["final_outcome"], "failure");
    let r = w.validate_symbol_relevance(&start(&w, Intent::Investigate, "login service"), Some("login service"), &["LoginService".into()], &[], None).unwrap();
    assert_eq!(r["cached_matches"], json!([]), "{r:#}");

    let again = w.record_outcome(&sid, Outcome::Failure, "the check was wrong", None).unwrap();
    assert_eq!(again["already_recorded"], true);
    assert!(w.record_outcome(&sid, Outcome::Success, "fixed", None).is_err(), "a success after the failure needs a new session");
    assert_eq!(w.get_session_analysis(&sid).unwrap()["outcomes"].as_array().unwrap().len(), 2);
}

#[test]
fn restart_mid_session_loses_nothing() {
    let fx = Fixture::new();
    let sid;
    {
        let w = fx.open();
        sid = start(&w, Intent::Modify, "The login form shows no error when the password is empty; add a check to the login form.");
        w.set_query_frame(&sid, &json!({
            "target_feature": {"value": "login", "quote": "login"},
            "observed_issue": {"value": "no error", "quote": "shows no error"},
            "trigger_condition": {"value": "password is empty", "quote": "when the password is empty"},
            "desired_action": {"value": "add a check", "quote": "add a check to the login form"},
        })).unwrap();
        explore_login(&w, &sid);
        assert_eq!(w.active_session().unwrap().as_deref(), Some(sid.as_str()));
    }
    let w = fx.open();
    let status = w.get_session_status(&sid).unwrap();
    assert_eq!(status["phase"], "EXPLORATION");
    assert_eq!(status["tools_used"], json!(["find_definitions", "find_references"]));
    let sub = understanding(&["LoginForm", "LoginView", "LoginService"], &["LoginView"], &["app/forms.py", "app/views.py"], &["forms validate in clean()"]);
    let r = w.submit_understanding(&sid, &sub).unwrap();
    assert_eq!(r["next_phase"], "READY", "{r:#}");
    drop(w);
    let w = fx.open();
    assert_eq!(w.check_write_target(&sid, "app/forms.py").unwrap()["allowed"], true);
    assert!(matches!(w.get_session_status("ses-nope"), Err(code_intel_session::SessionError::UnknownSession(_))));
}

#[test]
fn question_is_ready_at_once_and_query_plans_without_session() {
    let fx = Fixture::new();
    let w = fx.open();
    let r = w.start_session(Intent::Question, "What does LoginService do?").unwrap();
    assert_eq!(r["phase"], "READY");
    let plan = w.query(None, "where is the login handled", None).unwrap();
    assert_eq!(plan["plan"]["missing_slots"].as_array().unwrap().len(), 4);
    assert!(w.start_session(Intent::Modify, "   ").is_err());
}

/// `query` text is held to the bound of a request, before anything is
/// logged: a pasted file is refused with the limit named, not stored.
#[test]
fn query_text_over_the_request_limit_is_refused_unlogged() {
    let fx = Fixture::new();
    let w = fx.open();
    let sid = start(&w, Intent::Investigate, "Where is the login handled?");
    let long = "x".repeat(code_intel_session::workflow::MAX_QUERY_CHARS + 1);
    for session in [None, Some(sid.as_str())] {
        let e = w.query(session, &long, None).unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
        assert!(e.to_string().contains("`text`") && e.to_string().contains("20000"), "{e}");
    }
    assert!(w.start_session(Intent::Investigate, &long).unwrap_err().to_string().contains("20000"));
    let ok = "x".repeat(code_intel_session::workflow::MAX_QUERY_CHARS);
    assert!(w.query(None, &ok, None).is_ok());
}

/// A client whose answer to `submit_understanding` was lost in a crash sends
/// it again: it gets what the first submission established, not a phase
/// refusal; anything but such a retry is still refused in READY.
#[test]
fn a_retried_understanding_gets_its_recorded_answer() {
    let fx = Fixture::new();
    let w = fx.open();
    let q = "When the password is empty the login form shows no error; add a check to the login form.";
    let sid = start(&w, Intent::Modify, q);
    w.set_query_frame(
        &sid,
        &json!({
            "target_feature": {"value": "login", "quote": "login"},
            "trigger_condition": {"value": "password is empty", "quote": "When the password is empty"},
            "observed_issue": {"value": "no error shown", "quote": "shows no error"},
            "desired_action": {"value": "add a check", "quote": "add a check to the login form"},
        }),
    )
    .unwrap();
    tool(&w, &sid, "find_definitions", json!({"symbol": "LoginForm"}), defs(&[("LoginForm", "app/forms.py"), ("LoginView", "app/views.py"), ("LoginService", "app/auth.py")])).unwrap();
    tool(&w, &sid, "find_references", json!({"symbol": "LoginForm"}), json!({"references": [{"file": "app/views.py", "line": 2}]})).unwrap();
    let sub = understanding(&["LoginForm", "LoginView", "LoginService"], &["LoginView"], &["app/forms.py", "app/views.py"], &["forms validate in clean()"]);
    let first = w.submit_understanding(&sid, &sub).unwrap();
    assert_eq!((&first["accepted"], &first["next_phase"]), (&json!(true), &json!("READY")), "{first:#}");
    assert!(first.get("already_submitted").is_none());

    let again = w.submit_understanding(&sid, &sub).unwrap();
    assert_eq!(again["already_submitted"], true, "{again:#}");
    for key in ["accepted", "next_phase", "requirements", "have", "missing_requirements", "explored_files", "risk_level"] {
        assert_eq!(again[key], first[key], "{key}");
    }
    assert_eq!(w.get_session_status(&sid).unwrap()["tool_calls"], json!(3), "the retry records no call");

    // Another understanding is no retry: refused.
    let other = understanding(&["LoginForm", "LoginView", "LoginService"], &["LoginView"], &["app/forms.py"], &["forms validate in clean()"]);
    assert!(w.submit_understanding(&sid, &other).unwrap_err().to_string().contains("READY"));
    // Nor is the same one after the session went on.
    tool(&w, &sid, "find_definitions", json!({"symbol": "LoginView"}), defs(&[("LoginView", "app/views.py")])).unwrap();
    assert!(w.submit_understanding(&sid, &sub).unwrap_err().to_string().contains("READY"));
}
