//! TLS to the shared store, against a real PostgreSQL 16 + pgvector server
//! (`scripts/pg`) behind a TLS front that speaks PostgreSQL's SSLRequest
//! negotiation (`tests/standin/pg_tls_front.py`; the server's own binaries
//! have no TLS). The front drops clients that do not ask for TLS, so a
//! connection through it that works was encrypted; its certificate names
//! `localhost` only and is signed by a CA made when it starts.
//!
//! - `verify-full` with the right root certificate: `code-intel index`
//!   publishes, and a second checkout configured through `PGSSLMODE` and
//!   `PGSSLROOTCERT` takes every chunk list and vector; an untrusted
//!   certificate leaves indexing local-only with a status line naming
//!   `sslrootcert`, exit 0.
//! - The modes as libpq has them: `require` encrypts without a root
//!   certificate, `verify-ca` checks the CA and not the host name,
//!   `verify-full` both, `prefer` encrypts when offered and goes on plain
//!   when refused or when the handshake fails, `disable` never asks; `require` against a server that
//!   refuses TLS says so.

mod embed_support;
mod services;

use std::path::Path;
use std::process::{Command, Output};

use code_intel_shared::SharedStore;
use serde_json::Value;
use services::{FrontMode, Postgres, TlsFront, copy_dir};

/// `code-intel index --json REPO` with the test model, `store` as the
/// shared store and `env` set (no PG* variable of the caller's).
fn index(repo: &Path, store: &str, model_dir: &Path, env: &[(&str, &Path)], json: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_code-intel"));
    command.arg("index");
    if json {
        command.arg("--json");
    }
    command
        .arg(repo)
        .env("CODE_INTEL_SHARED_STORE", store)
        .env("CODE_INTEL_MODEL_DIR", model_dir)
        .env("CODE_INTEL_ENGLISH_MODEL_DIR", "/nonexistent/english-model")
        .env_remove("CODE_INTEL_EMBEDDING_ENDPOINT");
    for name in ["PGSSLMODE", "PGSSLROOTCERT", "PGPASSWORD", "PGUSER", "SSL_CERT_FILE", "SSL_CERT_DIR"] {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn report(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "index failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn password(url: &str) -> String {
    url.split("://").nth(1).unwrap().split('@').next().unwrap().split(':').nth(1).unwrap().to_string()
}

/// `postgres://code_intel:<password>@HOST:PORT/code_intel` plus `query`.
fn url(pg: &Postgres, host: &str, port: u16, query: &str) -> String {
    format!("postgres://code_intel:{}@{host}:{port}/code_intel{query}", password(&pg.url))
}

#[test]
fn verify_full_publishes_and_a_second_checkout_takes_vectors_over_tls() {
    let Some(model_dir) =
        embed_support::real_model_dir("verify_full_publishes_and_a_second_checkout_takes_vectors_over_tls")
    else {
        return;
    };
    let pg = Postgres::start();
    let tmp = tempfile::tempdir().unwrap();
    let front = TlsFront::start(pg.port(), &tmp.path().join("certs"), FrontMode::TlsOnly);
    let (first, second) = (tmp.path().join("ci/app"), tmp.path().join("laptop/app"));
    copy_dir(&embed_support::fixture_dir(), &first);
    copy_dir(&embed_support::fixture_dir(), &second);
    let secret = password(&pg.url);

    // CI publishes through TLS, the certificate checked against the CA and
    // the host name.
    let store = url(
        &pg,
        "localhost",
        front.port,
        &format!("?sslmode=verify-full&sslrootcert={}", front.ca.display()),
    );
    let out = index(&first, &store, &model_dir, &[], true);
    let published = report(&out);
    let shared = &published["shared"];
    assert_eq!(shared["status"], "connected", "{shared}");
    let files = published["total_files"].as_u64().unwrap();
    let chunks = published["total_chunks"].as_u64().unwrap();
    let vectors = shared["vectors_published"].as_u64().unwrap();
    assert!(files >= 5 && vectors > 0, "{published}");
    assert_eq!(shared["chunk_lists_published"].as_u64().unwrap(), files, "{shared}");
    assert_eq!(
        shared["store"].as_str().unwrap(),
        format!("postgres://code_intel@localhost:{}/code_intel", front.port)
    );
    for text in [&out.stdout, &out.stderr] {
        assert!(!String::from_utf8_lossy(text).contains(&secret), "the password is never printed");
    }

    // A second checkout, the TLS settings from the environment: it takes
    // everything and embeds nothing.
    let plain_url = url(&pg, "localhost", front.port, "");
    let taken = report(&index(
        &second,
        &plain_url,
        &model_dir,
        &[("PGSSLMODE", Path::new("verify-full")), ("PGSSLROOTCERT", &front.ca)],
        true,
    ));
    let shared = &taken["shared"];
    assert_eq!(shared["status"], "connected", "{shared}");
    assert_eq!(shared["files_from_store"].as_u64().unwrap(), files, "{shared}");
    assert_eq!(shared["chunks_from_store"].as_u64().unwrap(), chunks, "{shared}");
    assert_eq!(shared["vectors_from_store"].as_u64().unwrap(), vectors, "{shared}");
    assert_eq!(taken["embedding"]["embedded_chunks"], 0, "nothing re-embedded: {taken}");

    // A root certificate that did not sign the server's: local-only, one
    // status line naming sslrootcert, exit 0, the local index complete.
    std::fs::remove_dir_all(second.join(".code-intel")).unwrap();
    let untrusted = url(
        &pg,
        "localhost",
        front.port,
        &format!("?sslmode=verify-full&sslrootcert={}", front.other_ca.display()),
    );
    let out = index(&second, &untrusted, &model_dir, &[], false);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("shared store"))
        .unwrap_or_else(|| panic!("no shared store line: {text}"));
    assert!(
        line.contains(&format!("postgres://code_intel@localhost:{}/code_intel unavailable", front.port))
            && line.contains("not signed by a CA in sslrootcert")
            && line.contains(&front.other_ca.display().to_string())
            && line.ends_with("indexed locally only"),
        "{line}"
    );
    assert!(!text.contains(&secret) && !String::from_utf8_lossy(&out.stderr).contains(&secret));
    let local = report(&index(&second, &untrusted, &model_dir, &[], true));
    assert!(local["shared"]["status"].as_str().unwrap().starts_with("unavailable: "), "{}", local["shared"]);
    assert_eq!(local["shared"]["files_from_store"], 0);
    let coverage = &local["embedding"]["coverage"];
    assert_eq!(coverage["embedded_chunks"].as_u64().unwrap(), chunks, "the local index is complete: {local}");

    // A server that refuses TLS under sslmode=require: said so, local-only.
    let refusing = TlsFront::start(pg.port(), &tmp.path().join("certs-refusing"), FrontMode::RefuseTls);
    let r = report(&index(
        &second,
        &url(&pg, "localhost", refusing.port, "?sslmode=require"),
        &model_dir,
        &[],
        true,
    ));
    let status = r["shared"]["status"].as_str().unwrap();
    assert!(status.contains("the server does not offer TLS") && status.contains("sslmode=require"), "{status}");
    assert_eq!(r["embedding"]["coverage"]["embedded_chunks"].as_u64().unwrap(), chunks);

    // sslrootcert=system: the system's trusted roots (here the test CA, through
    // SSL_CERT_FILE), and verify-full by default: the host name is checked.
    let system = [("SSL_CERT_FILE", front.ca.as_path())];
    let r = report(&index(
        &second,
        &url(&pg, "localhost", front.port, "?sslrootcert=system"),
        &model_dir,
        &system,
        true,
    ));
    assert_eq!(r["shared"]["status"], "connected", "{}", r["shared"]);
    let r = report(&index(
        &second,
        &url(&pg, "127.0.0.1", front.port, "?sslrootcert=system"),
        &model_dir,
        &system,
        true,
    ));
    let status = r["shared"]["status"].as_str().unwrap();
    assert!(
        status.contains("not valid for the host name 127.0.0.1") && status.contains("sslmode=verify-full, the default"),
        "{status}"
    );
}

#[test]
fn tls_modes_mean_what_they_mean_in_libpq_and_failures_say_what_to_fix() {
    let pg = Postgres::start();
    let tmp = tempfile::tempdir().unwrap();
    let front = TlsFront::start(pg.port(), &tmp.path().join("certs"), FrontMode::TlsOnly);
    let refusing = TlsFront::start(pg.port(), &tmp.path().join("certs-refusing"), FrontMode::RefuseTls);
    let secret = password(&pg.url);
    let (ca, other_ca) = (front.ca.display().to_string(), front.other_ca.display().to_string());
    let connects = |url: &str| match SharedStore::connect(url) {
        Ok(_) => Ok(()),
        Err(e) => {
            let text = e.to_string();
            assert!(!text.contains(&secret), "the password is never in a message: {text}");
            Err(e.reason)
        }
    };
    let tls = |host: &str, query: &str| connects(&url(&pg, host, front.port, query));
    let expect_err = |result: Result<(), String>, parts: &[&str]| {
        let reason = result.expect_err("refused");
        for part in parts {
            assert!(reason.contains(part), "{part:?} missing from: {reason}");
        }
    };

    // The front drops clients that do not ask for TLS: a connection through
    // it that works was encrypted.
    assert!(tls("localhost", "?sslmode=disable").is_err());

    // verify-full: the CA and the host name.
    tls("localhost", &format!("?sslmode=verify-full&sslrootcert={ca}")).unwrap();
    expect_err(
        tls("127.0.0.1", &format!("?sslmode=verify-full&sslrootcert={ca}")),
        &["not valid for the host name 127.0.0.1", "it names localhost", "sslmode=verify-ca"],
    );
    expect_err(
        tls("localhost", &format!("?sslmode=verify-full&sslrootcert={other_ca}")),
        &["not signed by a CA in sslrootcert", &other_ca, "(sslmode=verify-full)"],
    );
    expect_err(
        tls("localhost", "?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"),
        &["/nonexistent/ca.pem", "does not exist", "sslrootcert=system", "sslmode=require"],
    );
    // The same in libpq's key=value form.
    connects(&format!(
        "host=localhost port={} user=code_intel password={secret} dbname=code_intel sslmode=verify-full sslrootcert='{ca}'",
        front.port
    ))
    .unwrap();

    // verify-ca: the CA only.
    tls("127.0.0.1", &format!("?sslmode=verify-ca&sslrootcert={ca}")).unwrap();
    expect_err(
        tls("127.0.0.1", &format!("?sslmode=verify-ca&sslrootcert={other_ca}")),
        &["not signed by a CA in sslrootcert"],
    );

    // require: encrypted, the certificate unchecked without a root
    // certificate file; checked against one that exists (libpq).
    tls("127.0.0.1", "?sslmode=require&sslrootcert=/nonexistent/ca.pem").unwrap();
    expect_err(
        tls("127.0.0.1", &format!("?sslmode=require&sslrootcert={other_ca}")),
        &["not signed by a CA in sslrootcert"],
    );

    // prefer (the default): TLS when offered; after a failed handshake (the
    // certificate refused by an existing root certificate file), unencrypted,
    // as libpq does.
    tls("localhost", "?sslrootcert=/nonexistent/ca.pem").unwrap();
    assert!(tls("localhost", &format!("?sslrootcert={other_ca}")).is_err(), "the TLS-only front drops the plain retry");
    let either = TlsFront::start(pg.port(), &tmp.path().join("certs-either"), FrontMode::TlsOrPlain);
    let either_ca = either.other_ca.display().to_string();
    connects(&url(&pg, "localhost", either.port, &format!("?sslrootcert={either_ca}"))).unwrap();
    expect_err(
        connects(&url(&pg, "localhost", either.port, &format!("?sslmode=require&sslrootcert={either_ca}"))),
        &["not signed by a CA in sslrootcert"],
    );

    // A server without TLS: require says so; prefer and disable connect.
    let plain = |query: &str| connects(&url(&pg, "127.0.0.1", refusing.port, query));
    expect_err(plain("?sslmode=require"), &["the server does not offer TLS", "sslmode=require"]);
    plain("?sslmode=prefer").unwrap();
    plain("?sslmode=disable").unwrap();
    // The server itself (no TLS at all): disable and the default connect.
    connects(&url(&pg, "127.0.0.1", pg.port(), "?sslmode=disable")).unwrap();
    connects(&url(&pg, "127.0.0.1", pg.port(), "")).unwrap();

    // Settings that cannot work are refused before connecting.
    expect_err(tls("localhost", "?sslmode=verify_full"), &["sslmode=verify_full is not a TLS mode"]);
    expect_err(
        tls("localhost", "?sslmode=require&sslrootcert=system"),
        &["sslrootcert=system", "verify-full"],
    );
    expect_err(tls("localhost", "?sslcert=/c.pem"), &["client certificates"]);
}
