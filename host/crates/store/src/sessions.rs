//! Tables of the session workflow (SPEC §8): sessions, the tool calls made in
//! each session, the decision and outcome logs, learned NL -> symbol pairs and
//! the agreements written on success.
//!
//! Sessions, logs, learned pairs and agreements are the part of
//! `.code-intel/` that cannot be rebuilt from the source tree, so every write
//! here is one statement or one transaction, and nothing here is ever deleted
//! except learned pairs (which expire by design).
//!
//! The workflow's own state (query frame, evidence, hypotheses...) is a JSON
//! document in `sessions.state_json`, owned and versioned by the
//! `code-intel-session` crate; the columns beside it duplicate what other
//! queries need (phase, risk, open/closed) so they never parse JSON.
//!
//! This module knows nothing about the workflow's rules: it stores rows.

use rusqlite::{Connection, OptionalExtension, Row, params};

/// Schema of the session tables, registered in [`crate::migrations::SCHEMAS`].
/// Steps are append-only: a committed step is never edited, a change is a
/// new step.
pub const SCHEMA: crate::migrations::Schema = crate::migrations::Schema {
    module: "sessions",
    steps: &[
        // 1: the session workflow tables.
        r"
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    intent      TEXT NOT NULL,
    query       TEXT NOT NULL,
    phase       TEXT NOT NULL,
    risk_level  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    closed_at   TEXT,
    state_json  TEXT NOT NULL
) STRICT;
CREATE INDEX sessions_open ON sessions(closed_at, updated_at);

CREATE TABLE session_tool_calls (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT NOT NULL REFERENCES sessions(id),
    epoch         INTEGER NOT NULL,
    phase         TEXT NOT NULL,
    tool          TEXT NOT NULL,
    params_json   TEXT NOT NULL,
    summary_json  TEXT NOT NULL,
    refused       TEXT,
    created_at    TEXT NOT NULL
) STRICT;
CREATE INDEX session_tool_calls_session ON session_tool_calls(session_id, id);

CREATE TABLE decision_log (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id         TEXT,
    query              TEXT NOT NULL,
    intent             TEXT NOT NULL,
    missing_slots_json TEXT NOT NULL,
    risk_level         TEXT NOT NULL,
    tools_planned_json TEXT NOT NULL,
    plan_json          TEXT NOT NULL,
    created_at         TEXT NOT NULL
) STRICT;
CREATE INDEX decision_log_session ON decision_log(session_id, id);

CREATE TABLE outcome_log (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id       TEXT NOT NULL,
    outcome          TEXT NOT NULL,
    phase_at_outcome TEXT NOT NULL,
    intent           TEXT NOT NULL,
    risk_level       TEXT NOT NULL,
    semantic_used    INTEGER NOT NULL,
    tools_used_json  TEXT NOT NULL,
    analysis         TEXT NOT NULL,
    detail_json      TEXT NOT NULL,
    created_at       TEXT NOT NULL
) STRICT;
CREATE INDEX outcome_log_session ON outcome_log(session_id, id);

CREATE TABLE learned_pairs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    nl_term       TEXT NOT NULL,
    symbol        TEXT NOT NULL,
    similarity    REAL NOT NULL,
    method        TEXT NOT NULL,
    code_evidence TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    learned_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    UNIQUE (nl_term, symbol)
) STRICT;

CREATE TABLE agreements (
    id           TEXT PRIMARY KEY,
    session_id   TEXT NOT NULL,
    nl_term      TEXT NOT NULL,
    symbols_json TEXT NOT NULL,
    files_json   TEXT NOT NULL,
    path         TEXT NOT NULL,
    created_at   TEXT NOT NULL
) STRICT;
",
    ],
};

/// One row of `sessions`.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    pub id: String,
    pub intent: String,
    pub query: String,
    pub phase: String,
    pub risk_level: String,
    pub created_at: String,
    pub updated_at: String,
    pub closed_at: Option<String>,
    pub state_json: String,
}

const SESSION_COLUMNS: &str = "id, intent, query, phase, risk_level, created_at, updated_at, closed_at, state_json";

fn session_from_row(r: &Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: r.get(0)?,
        intent: r.get(1)?,
        query: r.get(2)?,
        phase: r.get(3)?,
        risk_level: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
        closed_at: r.get(7)?,
        state_json: r.get(8)?,
    })
}

/// Inserts a new session, or replaces the row of an existing one.
///
/// # Errors
/// Any SQLite error.
pub fn save_session(conn: &Connection, s: &SessionRow) -> rusqlite::Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT(id) DO UPDATE SET intent = excluded.intent, query = excluded.query,
               phase = excluded.phase, risk_level = excluded.risk_level, updated_at = excluded.updated_at,
               closed_at = excluded.closed_at, state_json = excluded.state_json"
        ),
        params![
            s.id,
            s.intent,
            s.query,
            s.phase,
            s.risk_level,
            s.created_at,
            s.updated_at,
            s.closed_at,
            s.state_json
        ],
    )?;
    Ok(())
}

/// The session with this id.
///
/// # Errors
/// Any SQLite error.
pub fn get_session(conn: &Connection, id: &str) -> rusqlite::Result<Option<SessionRow>> {
    conn.query_row(&format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"), [id], session_from_row)
        .optional()
}

/// The most recently updated session that has no outcome yet (the one an
/// editor hook guards), if any.
///
/// # Errors
/// Any SQLite error.
pub fn latest_open_session(conn: &Connection) -> rusqlite::Result<Option<SessionRow>> {
    conn.query_row(
        &format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE closed_at IS NULL ORDER BY updated_at DESC, rowid DESC LIMIT 1"
        ),
        [],
        session_from_row,
    )
    .optional()
}

/// A tool call to append to `session_tool_calls`.
#[derive(Clone, Debug, PartialEq)]
pub struct NewToolCall<'a> {
    pub session_id: &'a str,
    pub epoch: u32,
    pub phase: &'a str,
    pub tool: &'a str,
    pub params_json: &'a str,
    pub summary_json: &'a str,
    pub refused: Option<&'a str>,
    pub created_at: &'a str,
}

/// One row of `session_tool_calls`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallRow {
    pub id: i64,
    pub session_id: String,
    pub epoch: u32,
    pub phase: String,
    pub tool: String,
    pub params_json: String,
    pub summary_json: String,
    pub refused: Option<String>,
    pub created_at: String,
}

/// Appends a tool call; returns its id (increasing within the database, so it
/// orders calls).
///
/// # Errors
/// Any SQLite error.
pub fn insert_tool_call(conn: &Connection, c: &NewToolCall<'_>) -> rusqlite::Result<i64> {
    conn.execute(
        "INSERT INTO session_tool_calls (session_id, epoch, phase, tool, params_json, summary_json, refused, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![c.session_id, c.epoch, c.phase, c.tool, c.params_json, c.summary_json, c.refused, c.created_at],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Every tool call of a session, oldest first.
///
/// # Errors
/// Any SQLite error.
pub fn tool_calls(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<ToolCallRow>> {
    let mut stmt = conn.prepare(
        "SELECT id, session_id, epoch, phase, tool, params_json, summary_json, refused, created_at
         FROM session_tool_calls WHERE session_id = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([session_id], |r| {
        Ok(ToolCallRow {
            id: r.get(0)?,
            session_id: r.get(1)?,
            epoch: r.get(2)?,
            phase: r.get(3)?,
            tool: r.get(4)?,
            params_json: r.get(5)?,
            summary_json: r.get(6)?,
            refused: r.get(7)?,
            created_at: r.get(8)?,
        })
    })?;
    rows.collect()
}

/// One row of `decision_log`.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionRow {
    pub id: i64,
    pub session_id: Option<String>,
    pub query: String,
    pub intent: String,
    pub missing_slots_json: String,
    pub risk_level: String,
    pub tools_planned_json: String,
    pub plan_json: String,
    pub created_at: String,
}

/// Appends a decision; `id` is ignored. Returns the new id.
///
/// # Errors
/// Any SQLite error.
pub fn insert_decision(conn: &Connection, d: &DecisionRow) -> rusqlite::Result<i64> {
    conn.execute(
        "INSERT INTO decision_log (session_id, query, intent, missing_slots_json, risk_level, tools_planned_json, plan_json, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            d.session_id,
            d.query,
            d.intent,
            d.missing_slots_json,
            d.risk_level,
            d.tools_planned_json,
            d.plan_json,
            d.created_at
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Decisions of a session, oldest first.
///
/// # Errors
/// Any SQLite error.
pub fn decisions(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<DecisionRow>> {
    let mut stmt = conn.prepare(
        "SELECT id, session_id, query, intent, missing_slots_json, risk_level, tools_planned_json, plan_json, created_at
         FROM decision_log WHERE session_id = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([session_id], |r| {
        Ok(DecisionRow {
            id: r.get(0)?,
            session_id: r.get(1)?,
            query: r.get(2)?,
            intent: r.get(3)?,
            missing_slots_json: r.get(4)?,
            risk_level: r.get(5)?,
            tools_planned_json: r.get(6)?,
            plan_json: r.get(7)?,
            created_at: r.get(8)?,
        })
    })?;
    rows.collect()
}

/// One row of `outcome_log`.
#[derive(Clone, Debug, PartialEq)]
pub struct OutcomeRow {
    pub id: i64,
    pub session_id: String,
    pub outcome: String,
    pub phase_at_outcome: String,
    pub intent: String,
    pub risk_level: String,
    pub semantic_used: bool,
    pub tools_used_json: String,
    pub analysis: String,
    pub detail_json: String,
    pub created_at: String,
}

/// Appends an outcome; `id` is ignored. Returns the new id.
///
/// # Errors
/// Any SQLite error.
pub fn insert_outcome(conn: &Connection, o: &OutcomeRow) -> rusqlite::Result<i64> {
    conn.execute(
        "INSERT INTO outcome_log (session_id, outcome, phase_at_outcome, intent, risk_level, semantic_used, tools_used_json, analysis, detail_json, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            o.session_id,
            o.outcome,
            o.phase_at_outcome,
            o.intent,
            o.risk_level,
            o.semantic_used,
            o.tools_used_json,
            o.analysis,
            o.detail_json,
            o.created_at
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

fn outcome_from_row(r: &Row<'_>) -> rusqlite::Result<OutcomeRow> {
    Ok(OutcomeRow {
        id: r.get(0)?,
        session_id: r.get(1)?,
        outcome: r.get(2)?,
        phase_at_outcome: r.get(3)?,
        intent: r.get(4)?,
        risk_level: r.get(5)?,
        semantic_used: r.get(6)?,
        tools_used_json: r.get(7)?,
        analysis: r.get(8)?,
        detail_json: r.get(9)?,
        created_at: r.get(10)?,
    })
}

const OUTCOME_COLUMNS: &str = "id, session_id, outcome, phase_at_outcome, intent, risk_level, semantic_used, tools_used_json, analysis, detail_json, created_at";

/// Outcomes of a session, oldest first.
///
/// # Errors
/// Any SQLite error.
pub fn outcomes(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<OutcomeRow>> {
    let mut stmt =
        conn.prepare(&format!("SELECT {OUTCOME_COLUMNS} FROM outcome_log WHERE session_id = ?1 ORDER BY id"))?;
    let rows = stmt.query_map([session_id], outcome_from_row)?;
    rows.collect()
}

/// The `limit` most recent outcomes, newest first.
///
/// # Errors
/// Any SQLite error.
pub fn recent_outcomes(conn: &Connection, limit: u32) -> rusqlite::Result<Vec<OutcomeRow>> {
    let mut stmt = conn.prepare(&format!("SELECT {OUTCOME_COLUMNS} FROM outcome_log ORDER BY id DESC LIMIT ?1"))?;
    let rows = stmt.query_map([limit], outcome_from_row)?;
    rows.collect()
}

/// One row of `learned_pairs`.
#[derive(Clone, Debug, PartialEq)]
pub struct LearnedPairRow {
    pub id: i64,
    pub nl_term: String,
    pub symbol: String,
    pub similarity: f64,
    pub method: String,
    pub code_evidence: String,
    pub session_id: String,
    pub learned_at: String,
    pub expires_at: String,
}

/// Inserts a learned pair, or refreshes the existing pair for the same
/// `(nl_term, symbol)` (new evidence, session, timestamps). `id` is ignored.
///
/// # Errors
/// Any SQLite error.
pub fn upsert_learned_pair(conn: &Connection, p: &LearnedPairRow) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO learned_pairs (nl_term, symbol, similarity, method, code_evidence, session_id, learned_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT(nl_term, symbol) DO UPDATE SET similarity = excluded.similarity, method = excluded.method,
           code_evidence = excluded.code_evidence, session_id = excluded.session_id,
           learned_at = excluded.learned_at, expires_at = excluded.expires_at",
        params![p.nl_term, p.symbol, p.similarity, p.method, p.code_evidence, p.session_id, p.learned_at, p.expires_at],
    )?;
    Ok(())
}

/// All learned pairs, oldest first.
///
/// # Errors
/// Any SQLite error.
pub fn learned_pairs(conn: &Connection) -> rusqlite::Result<Vec<LearnedPairRow>> {
    let mut stmt = conn.prepare(
        "SELECT id, nl_term, symbol, similarity, method, code_evidence, session_id, learned_at, expires_at
         FROM learned_pairs ORDER BY id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(LearnedPairRow {
            id: r.get(0)?,
            nl_term: r.get(1)?,
            symbol: r.get(2)?,
            similarity: r.get(3)?,
            method: r.get(4)?,
            code_evidence: r.get(5)?,
            session_id: r.get(6)?,
            learned_at: r.get(7)?,
            expires_at: r.get(8)?,
        })
    })?;
    rows.collect()
}

/// Deletes learned pairs whose `expires_at` is before `now` (both RFC 3339
/// UTC, which compare as text). Returns how many were deleted.
///
/// # Errors
/// Any SQLite error.
pub fn delete_expired_learned_pairs(conn: &Connection, now: &str) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM learned_pairs WHERE expires_at < ?1", [now])
}

/// Deletes one learned pair by id.
///
/// # Errors
/// Any SQLite error.
pub fn delete_learned_pair(conn: &Connection, id: i64) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM learned_pairs WHERE id = ?1", [id])
}

/// Deletes the learned pairs a session taught (its outcome was later reported
/// as a failure). Returns how many were deleted.
///
/// # Errors
/// Any SQLite error.
pub fn delete_learned_pairs_of_session(conn: &Connection, session_id: &str) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM learned_pairs WHERE session_id = ?1", [session_id])
}

/// One row of `agreements` (the markdown file is the record; this row lists it).
#[derive(Clone, Debug, PartialEq)]
pub struct AgreementRow {
    pub id: String,
    pub session_id: String,
    pub nl_term: String,
    pub symbols_json: String,
    pub files_json: String,
    pub path: String,
    pub created_at: String,
}

/// Inserts (or replaces) an agreement row.
///
/// # Errors
/// Any SQLite error.
pub fn save_agreement(conn: &Connection, a: &AgreementRow) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO agreements (id, session_id, nl_term, symbols_json, files_json, path, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![a.id, a.session_id, a.nl_term, a.symbols_json, a.files_json, a.path, a.created_at],
    )?;
    Ok(())
}

/// Deletes the agreement rows of a session (a `failure` outcome taking back
/// its `success`) and returns them, so their files can be deleted too.
///
/// # Errors
/// Any SQLite error.
pub fn delete_agreements_of_session(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<AgreementRow>> {
    let rows = agreements_of_session(conn, session_id)?;
    conn.execute("DELETE FROM agreements WHERE session_id = ?1", [session_id])?;
    Ok(rows)
}

/// Agreements written by a session.
///
/// # Errors
/// Any SQLite error.
pub fn agreements_of_session(conn: &Connection, session_id: &str) -> rusqlite::Result<Vec<AgreementRow>> {
    let mut stmt = conn.prepare(
        "SELECT id, session_id, nl_term, symbols_json, files_json, path, created_at
         FROM agreements WHERE session_id = ?1 ORDER BY created_at",
    )?;
    let rows = stmt.query_map([session_id], |r| {
        Ok(AgreementRow {
            id: r.get(0)?,
            session_id: r.get(1)?,
            nl_term: r.get(2)?,
            symbols_json: r.get(3)?,
            files_json: r.get(4)?,
            path: r.get(5)?,
            created_at: r.get(6)?,
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open() -> (tempfile::TempDir, crate::Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::Store::open(&dir.path().join("t.db")).unwrap();
        (dir, store)
    }

    #[test]
    fn migrate_is_idempotent_and_sessions_round_trip() {
        let (dir, store) = open();
        let conn = store.conn();
        let row = SessionRow {
            id: "s1".into(),
            intent: "MODIFY".into(),
            query: "fix login".into(),
            phase: "EXPLORATION".into(),
            risk_level: "HIGH".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:00Z".into(),
            closed_at: None,
            state_json: "{}".into(),
        };
        save_session(conn, &row).unwrap();
        let mut changed = row.clone();
        changed.phase = "READY".into();
        changed.updated_at = "2026-01-01T00:01:00Z".into();
        save_session(conn, &changed).unwrap();
        drop(store);
        let store = crate::Store::open(&dir.path().join("t.db")).unwrap();
        let conn = store.conn();
        assert_eq!(get_session(conn, "s1").unwrap().unwrap(), changed);
        assert_eq!(latest_open_session(conn).unwrap().unwrap().id, "s1");
        changed.closed_at = Some("2026-01-01T00:02:00Z".into());
        save_session(conn, &changed).unwrap();
        assert!(latest_open_session(conn).unwrap().is_none());
    }

    #[test]
    fn learned_pairs_upsert_and_expire() {
        let (_dir, store) = open();
        let conn = store.conn();
        let mut p = LearnedPairRow {
            id: 0,
            nl_term: "login".into(),
            symbol: "AuthService".into(),
            similarity: 0.7,
            method: "lexical".into(),
            code_evidence: "AuthService.login".into(),
            session_id: "s1".into(),
            learned_at: "2026-01-01T00:00:00Z".into(),
            expires_at: "2026-01-31T00:00:00Z".into(),
        };
        upsert_learned_pair(conn, &p).unwrap();
        p.session_id = "s2".into();
        p.expires_at = "2026-03-01T00:00:00Z".into();
        upsert_learned_pair(conn, &p).unwrap();
        let all = learned_pairs(conn).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].session_id, "s2");
        assert_eq!(delete_expired_learned_pairs(conn, "2026-02-01T00:00:00Z").unwrap(), 0);
        assert_eq!(delete_expired_learned_pairs(conn, "2026-04-01T00:00:00Z").unwrap(), 1);
    }
}
