//! The remote encoder against a real OpenAI-compatible server: the stand-in
//! (`tests/standin/embeddings_server.py`) computes the test model's vectors
//! (multilingual-e5-small from `CODE_INTEL_TEST_MODEL_DIR`) with numpy, and
//! code-intel's local encoder computes them with candle; the two must agree.
//! The stand-in also refuses bad keys, fails its first requests and caps the
//! batch size, so retries, batch splitting and error messages are exercised
//! for real.

mod embed_support;
mod services;

use std::time::{Duration, Instant};

use code_intel_embed::{Encoder, EncoderOptions, ModelSource, RemoteOptions, Role};
use services::Standin;

const MODEL: &str = "intfloat/multilingual-e5-small";

fn texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "def login(user, password):\n    return auth.check(user, password)",
        "class OrderTotal:\n    def compute(self, items, tax):\n        return sum(i.price for i in items) * (1 + tax)",
        "function sendMonthlyReport(email) { return mailer.send(email, report.monthly()); }",
        "ユーザーのパスワードを検証する関数",
        "Schema::create('users', function (Blueprint $table) { $table->id(); $table->string('email')->unique(); });",
        "x",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    // More than one batch, and one text past the 512-token window (both
    // sides must truncate it the same way).
    for i in 0..30 {
        texts.push(format!(
            "fn handler_{i}(request: Request) -> Response {{ route(\"/api/v{i}/items\", request) }}"
        ));
    }
    texts.push("let value = compute(alpha, beta, gamma); ".repeat(200));
    texts
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>()
        / (a.iter().map(|x| x * x).sum::<f32>().sqrt()
            * b.iter().map(|x| x * x).sum::<f32>().sqrt())
}

#[test]
fn remote_vectors_equal_local_embedding_through_retries_and_batch_limits() {
    let Some(model_dir) = embed_support::real_model_dir(
        "remote_vectors_equal_local_embedding_through_retries_and_batch_limits",
    ) else {
        return;
    };
    // The server refuses batches over 8 inputs (the client sends 16 and must
    // split), fails its first two requests with 503 (the client must retry)
    // and wants a key.
    let server = Standin::start(
        &model_dir,
        &[
            "--api-key",
            "sekrit",
            "--fail-first",
            "2",
            "--max-batch",
            "8",
        ],
    );
    let options = RemoteOptions {
        api_key: Some("sekrit".into()),
        batch_size: 16,
        concurrency: 2,
        backoff: Duration::from_millis(20),
        ..RemoteOptions::new(&server.base_url, MODEL)
    };
    let remote = Encoder::remote(options).expect("the stand-in answers");
    let local = Encoder::load(
        &embed_support::real_model(&model_dir),
        &EncoderOptions::default(),
    )
    .expect("the test model loads");
    assert_eq!(remote.dim(), local.dim());
    assert_eq!(remote.info().source, ModelSource::Remote);
    assert_ne!(
        remote.info().key,
        local.info().key,
        "remote and local vectors must never share a key"
    );
    assert!(
        remote.info().key.name.contains("127.0.0.1") && remote.info().key.name.ends_with(MODEL),
        "{}",
        remote.info().key
    );
    assert_eq!(
        remote.info().prompts.query,
        "query: ",
        "e5 prompts are added on the client side"
    );

    let texts = texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for role in [Role::Passage, Role::Query] {
        let started = Instant::now();
        let (remote_vectors, remote_tokens) =
            remote.embed_counted(&refs, role, &|_, _| {}).unwrap();
        let remote_secs = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let (local_vectors, local_tokens) = local.embed_counted(&refs, role, &|_, _| {}).unwrap();
        let local_secs = started.elapsed().as_secs_f64();
        assert_eq!(remote_vectors.len(), texts.len());
        assert_eq!(
            remote_tokens, local_tokens,
            "the server tokenised the same texts into as many tokens ({role:?})"
        );
        let mut worst = 1f32;
        for (i, (r, l)) in remote_vectors.iter().zip(&local_vectors).enumerate() {
            let c = cosine(r, l);
            assert!(
                c >= 0.999,
                "text {i} ({role:?}): cosine {c} between remote and local vectors"
            );
            worst = worst.min(c);
        }
        // Unrelated texts stay apart: the vectors are not all alike.
        assert!(cosine(&remote_vectors[0], &remote_vectors[3]) < 0.95);
        eprintln!(
            "{role:?}: worst cosine {worst:.6}; remote (numpy stand-in) {:.0} tokens/s, local encoder {:.0} tokens/s",
            remote_tokens as f64 / remote_secs,
            local_tokens as f64 / local_secs
        );
    }
    let stats = server.stats();
    assert_eq!(stats["failed"], 2, "{stats}");
    assert!(
        stats["too_large"].as_u64().unwrap() >= 1,
        "the client's 16-input batches were refused and split: {stats}"
    );
    assert_eq!(stats["unauthorized"], 0, "{stats}");
    assert_eq!(
        stats["inputs"].as_u64().unwrap(),
        1 + 2 * texts.len() as u64,
        "every text sent once per role, plus the probe: {stats}"
    );
}

#[test]
fn remote_failures_say_what_to_fix() {
    let Some(model_dir) = embed_support::real_model_dir("remote_failures_say_what_to_fix") else {
        return;
    };
    let quick = |endpoint: &str, model: &str, key: Option<&str>| RemoteOptions {
        api_key: key.map(str::to_string),
        retries: 1,
        backoff: Duration::from_millis(10),
        timeout: Duration::from_millis(1500),
        ..RemoteOptions::new(endpoint, model)
    };
    let server = Standin::start(&model_dir, &["--api-key", "right"]);
    let error = Encoder::remote(quick(&server.base_url, MODEL, Some("wrong")))
        .err()
        .expect("a wrong key is refused")
        .to_string();
    assert!(
        error.contains("CODE_INTEL_EMBEDDING_API_KEY") && error.contains("401"),
        "{error}"
    );
    assert!(
        !error.contains("wrong"),
        "the key is never printed: {error}"
    );
    let error = Encoder::remote(quick(&server.base_url, "no/such-model", Some("right")))
        .err()
        .expect("an unknown model is refused")
        .to_string();
    assert!(
        error.contains("embedding_model") && error.contains("no/such-model"),
        "{error}"
    );
    let error = Encoder::remote(quick("localhost:8080", MODEL, None))
        .err()
        .expect("a URL without scheme is refused")
        .to_string();
    assert!(error.contains("http://"), "{error}");
    drop(server);

    // Nothing listens: retried, then an error naming the endpoint.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://user:pw@127.0.0.1:{port}/v1");
    let error = Encoder::remote(quick(&endpoint, MODEL, None))
        .err()
        .expect("nothing listens")
        .to_string();
    assert!(
        error.contains(&format!("127.0.0.1:{port}"))
            && error.contains("failed 2 times")
            && error.contains("cannot connect"),
        "{error}"
    );
    assert!(
        !error.contains("pw@"),
        "credentials in the URL are never printed: {error}"
    );

    // A server slower than the timeout.
    let slow = Standin::start(&model_dir, &["--delay-ms", "3000"]);
    let started = Instant::now();
    let error = Encoder::remote(quick(&slow.base_url, MODEL, None))
        .err()
        .expect("too slow")
        .to_string();
    assert!(error.contains("no answer within"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "two tries of 1.5 s, not more: {:?}",
        started.elapsed()
    );
}
