//! Schema migrations: every module of this crate owns an append-only list of
//! SQL steps; [`SCHEMAS`] lists the modules.
//!
//! Each module's progress is recorded in the `schema_versions` table
//! (module -> number of its steps applied), so one module adding a step never
//! renumbers another's. `PRAGMA user_version` holds the total number of steps
//! applied across all modules: opening an up-to-date database costs one
//! pragma read, and a database written by a newer code-intel (more steps than
//! this binary knows) is refused instead of being half-understood.
//!
//! Rules for a module's `steps`:
//! - append only: never edit, reorder or remove a step that has been committed;
//!   fix a mistake with a new step;
//! - a step is one SQL batch, run in the same transaction as the version
//!   bump, so a crash mid-migration leaves the previous version intact;
//! - a module's tables are its own: reference other modules' tables by
//!   value (e.g. `content_hash`), not by foreign key, so each can be rebuilt.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::{Result, StoreError};

/// One module's schema history.
#[derive(Debug)]
pub struct Schema {
    /// Unique module name, recorded in `schema_versions`.
    pub module: &'static str,
    /// SQL batches, applied in order, each exactly once.
    pub steps: &'static [&'static str],
}

/// Every module's schema, in the order they are applied on a fresh database.
/// A new module adds one line here, after the ones it builds on.
pub const SCHEMAS: &[&Schema] = &[&crate::chunks::SCHEMA, &crate::embeddings::SCHEMA, &crate::sessions::SCHEMA, &crate::links::SCHEMA];

const BOOTSTRAP: &str = "CREATE TABLE IF NOT EXISTS schema_versions (
    module  TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) STRICT;";

fn total_steps(schemas: &[&Schema]) -> i64 {
    schemas.iter().map(|s| i64::try_from(s.steps.len()).unwrap_or(i64::MAX)).sum()
}

/// Brings the database up to date with [`SCHEMAS`].
///
/// # Errors
/// SQLite errors, or [`StoreError::NewerSchema`] when the database was
/// written by a newer code-intel.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    migrate_with(conn, SCHEMAS)
}

pub(crate) fn migrate_with(conn: &mut Connection, schemas: &[&Schema]) -> Result<()> {
    let expected = total_steps(schemas);
    let current: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if current == expected {
        return Ok(());
    }
    // IMMEDIATE: two processes opening a fresh database migrate one after the other.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(BOOTSTRAP)?;
    for schema in schemas {
        let applied: i64 = tx
            .query_row("SELECT version FROM schema_versions WHERE module = ?1", [schema.module], |r| r.get(0))
            .optional()?
            .unwrap_or(0);
        let known = i64::try_from(schema.steps.len()).unwrap_or(i64::MAX);
        if applied > known {
            return Err(StoreError::NewerSchema { module: schema.module.to_string(), found: applied, known });
        }
        for (n, step) in schema.steps.iter().enumerate().skip(usize::try_from(applied).unwrap_or(0)) {
            tx.execute_batch(step).map_err(|source| StoreError::Migration {
                module: schema.module.to_string(),
                step: n + 1,
                source,
            })?;
            tracing::debug!(module = schema.module, step = n + 1, "applied schema step");
        }
        tx.execute(
            "INSERT INTO schema_versions (module, version) VALUES (?1, ?2)
             ON CONFLICT (module) DO UPDATE SET version = excluded.version",
            rusqlite::params![schema.module, known],
        )?;
    }
    let total: i64 = tx.query_row("SELECT COALESCE(SUM(version), 0) FROM schema_versions", [], |r| r.get(0))?;
    if total > expected {
        // Another module (unknown to this binary) has steps: a newer code-intel wrote this.
        let module: String = tx.query_row(
            "SELECT group_concat(module, ', ') FROM schema_versions WHERE module NOT IN (SELECT value FROM json_each(?1))",
            [serde_json::to_string(&schemas.iter().map(|s| s.module).collect::<Vec<_>>())?],
            |r| r.get::<_, Option<String>>(0),
        )?
        .unwrap_or_default();
        return Err(StoreError::NewerSchema { module, found: total, known: expected });
    }
    tx.pragma_update(None, "user_version", total)?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A1: Schema = Schema { module: "a", steps: &["CREATE TABLE a (x INTEGER)"] };
    const A2: Schema = Schema { module: "a", steps: &["CREATE TABLE a (x INTEGER)", "ALTER TABLE a ADD COLUMN y TEXT"] };
    const B1: Schema = Schema { module: "b", steps: &["CREATE TABLE b (x INTEGER)"] };

    fn version(conn: &Connection) -> i64 {
        conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap()
    }

    #[test]
    fn steps_apply_once_and_modules_version_independently() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_with(&mut conn, &[&A1, &B1]).unwrap();
        assert_eq!(version(&conn), 2);
        migrate_with(&mut conn, &[&A1, &B1]).unwrap(); // idempotent
        // Module a gains a step: only that step runs, b is untouched.
        conn.execute("INSERT INTO b (x) VALUES (7)", []).unwrap();
        migrate_with(&mut conn, &[&A2, &B1]).unwrap();
        assert_eq!(version(&conn), 3);
        conn.execute("INSERT INTO a (x, y) VALUES (1, 'y')", []).unwrap();
        let kept: i64 = conn.query_row("SELECT x FROM b", [], |r| r.get(0)).unwrap();
        assert_eq!(kept, 7);
    }

    #[test]
    fn newer_database_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_with(&mut conn, &[&A2, &B1]).unwrap();
        let err = migrate_with(&mut conn, &[&A1, &B1]).unwrap_err();
        assert!(matches!(err, StoreError::NewerSchema { .. }), "{err}");
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_with(&mut conn, &[&A1, &B1]).unwrap();
        let err = migrate_with(&mut conn, &[&A1]).unwrap_err();
        assert!(err.to_string().contains('b'), "{err}");
    }

    #[test]
    fn failed_step_rolls_back_and_names_module() {
        const BAD: Schema = Schema { module: "bad", steps: &["CREATE TABLE ok (x)", "CREATE TABLE ok (x)"] };
        let mut conn = Connection::open_in_memory().unwrap();
        let err = migrate_with(&mut conn, &[&BAD]).unwrap_err();
        assert!(err.to_string().contains("bad") && err.to_string().contains("step 2"), "{err}");
        let tables: i64 =
            conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'ok'", [], |r| r.get(0)).unwrap();
        assert_eq!(tables, 0, "the whole migration rolled back");
    }
}
