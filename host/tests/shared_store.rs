//! The shared store on a real PostgreSQL 16 + pgvector server that each test
//! starts itself (`scripts/pg`): a second checkout takes every chunk list and
//! vector a first one published and embeds nothing; a store that is down,
//! refuses the credentials or was migrated by a newer code-intel leaves
//! indexing local-only with a status line and exit 0; publishers running at
//! once neither duplicate nor corrupt rows; `search --shared` finds code in
//! every published repository and names it, and so does the MCP tool
//! `semantic_search` with `shared`, which answers from the local index, and
//! says why, when no store is configured or it goes away.

mod embed_support;
mod services;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

use code_intel_core::{Chunk, ChunkedFile, Metadata};
use code_intel_shared::SharedStore;
use serde_json::Value;
use services::{Postgres, copy_dir};

/// The English model's folder for these tests: all-MiniLM-L6-v2 from
/// `CODE_INTEL_MINILM_MODEL_DIR` when set, else a folder that does not
/// exist (the English model is then unavailable, whatever the machine's
/// models folder holds).
fn english_model_dir() -> std::path::PathBuf {
    std::env::var_os("CODE_INTEL_MINILM_MODEL_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| std::path::PathBuf::from("/nonexistent/english-model"), std::path::PathBuf::from)
}

/// `code-intel index --json REPO` with the test model and `store` as the shared store.
fn index(repo: &Path, store: &str, model_dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_code-intel"))
        .args(["index", "--json"])
        .arg(repo)
        .env("CODE_INTEL_SHARED_STORE", store)
        .env("CODE_INTEL_MODEL_DIR", model_dir)
        .env("CODE_INTEL_ENGLISH_MODEL_DIR", english_model_dir())
        .env_remove("CODE_INTEL_EMBEDDING_ENDPOINT")
        .output()
        .unwrap()
}

/// Distinct texts embedded by the English model in an `index --json` report.
fn english_embedded(report: &Value) -> u64 {
    report["english_embedding"]["embedded_chunks"].as_u64().unwrap_or(0)
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

fn password(url: &str) -> &str {
    url.split("://")
        .nth(1)
        .unwrap()
        .split('@')
        .next()
        .unwrap()
        .split(':')
        .nth(1)
        .unwrap()
}

#[test]
fn a_second_checkout_takes_chunks_and_vectors_from_the_store() {
    let Some(model_dir) =
        embed_support::real_model_dir("a_second_checkout_takes_chunks_and_vectors_from_the_store")
    else {
        return;
    };
    let pg = Postgres::start();
    let tmp = tempfile::tempdir().unwrap();
    let (first, second) = (
        tmp.path().join("ci/app"),
        tmp.path().join("laptop/elsewhere/app"),
    );
    copy_dir(&embed_support::fixture_dir(), &first);
    copy_dir(&embed_support::fixture_dir(), &second);

    let out = index(&first, &pg.url, &model_dir);
    let published = report(&out);
    let shared = &published["shared"];
    assert_eq!(shared["status"], "connected", "{shared}");
    let files = published["total_files"].as_u64().unwrap();
    let chunks = published["total_chunks"].as_u64().unwrap();
    assert!(files >= 5 && chunks >= files, "{published}");
    assert_eq!(shared["files_from_store"], 0);
    assert_eq!(
        shared["chunk_lists_published"].as_u64().unwrap(),
        files,
        "every file's chunk list is published: {shared}"
    );
    let main_embedded = published["embedding"]["embedded_chunks"].as_u64().unwrap();
    assert!(main_embedded > 0);
    // Both models' vectors are published (the English model's when installed).
    let english = english_embedded(&published);
    assert!(english == 0 || english == main_embedded, "{published}");
    let embedded = main_embedded + english;
    assert_eq!(
        shared["vectors_published"].as_u64().unwrap(),
        embedded,
        "every distinct text's vector is published: {shared}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains(password(&pg.url))
            && !stderr.contains(password(&pg.url)),
        "the password is never printed"
    );
    assert_eq!(
        shared["store"].as_str().unwrap(),
        format!("postgres://code_intel@127.0.0.1:{}/code_intel", pg.port())
    );

    // The second checkout, at another path with its own empty index,
    // chunks nothing and embeds nothing.
    let taken = report(&index(&second, &pg.url, &model_dir));
    let shared = &taken["shared"];
    assert_eq!(
        shared["files_from_store"].as_u64().unwrap(),
        files,
        "{shared}"
    );
    assert_eq!(
        shared["chunks_from_store"].as_u64().unwrap(),
        chunks,
        "{shared}"
    );
    assert_eq!(
        shared["vectors_from_store"].as_u64().unwrap(),
        embedded,
        "{shared}"
    );
    assert_eq!(
        taken["embedding"]["embedded_chunks"], 0,
        "nothing re-embedded: {taken}"
    );
    assert_eq!(english_embedded(&taken), 0, "nothing re-embedded by the English model: {taken}");
    assert_eq!(
        taken["embedding"]["coverage"]["embedded_chunks"]
            .as_u64()
            .unwrap(),
        chunks,
        "every chunk has a vector: {taken}"
    );
    assert_eq!(
        (
            shared["chunk_lists_published"].as_u64(),
            shared["vectors_published"].as_u64()
        ),
        (Some(0), Some(0)),
        "{shared}"
    );

    // Both local indexes hold the same chunks and vectors.
    let key = published["embedding"]["model"]
        .as_str()
        .unwrap()
        .to_string();
    let (name, revision) = key.rsplit_once('@').unwrap();
    let dump = |repo: &Path| {
        let store =
            code_intel_store::Store::open(&code_intel_core::config::database_path(repo)).unwrap();
        let model = store
            .embedding_model(name, revision)
            .unwrap()
            .expect("the model's row");
        let mut vectors = Vec::new();
        store
            .for_each_vector(model.id, model.dim, &mut |h, v| {
                vectors.push((h.to_string(), v))
            })
            .unwrap();
        vectors.sort_by(|a, b| a.0.cmp(&b.0));
        vectors
    };
    assert_eq!(dump(&first), dump(&second));

    // The plain summary names the store and what came from it.
    let out = Command::new(env!("CARGO_BIN_EXE_code-intel"))
        .args(["index", "--force"])
        .arg(&second)
        .env("CODE_INTEL_SHARED_STORE", &pg.url)
        .env("CODE_INTEL_MODEL_DIR", &model_dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("shared store postgres://code_intel@127.0.0.1:{}/code_intel: {files} files ({chunks} chunks)", pg.port())), "{text}");
}

#[test]
fn a_store_that_is_down_refuses_or_is_newer_leaves_indexing_local() {
    let Some(model_dir) = embed_support::real_model_dir(
        "a_store_that_is_down_refuses_or_is_newer_leaves_indexing_local",
    ) else {
        return;
    };
    let pg = Postgres::start();
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("app");
    copy_dir(&embed_support::fixture_dir(), &repo);
    let complete = |r: &Value| {
        let coverage = &r["embedding"]["coverage"];
        assert_eq!(
            coverage["embedded_chunks"], coverage["total_chunks"],
            "the local index is complete: {r}"
        );
        assert!(r["total_chunks"].as_u64().unwrap() > 0);
    };

    // Wrong password.
    let wrong = pg.url.replace(password(&pg.url), "not-the-password");
    let out = index(&repo, &wrong, &model_dir);
    let r = report(&out);
    let status = r["shared"]["status"].as_str().unwrap();
    assert!(
        status.starts_with("unavailable: password authentication failed"),
        "{status}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("not-the-password")
            && !String::from_utf8_lossy(&out.stderr).contains("not-the-password")
    );
    complete(&r);

    // Nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::remove_dir_all(repo.join(".code-intel")).unwrap();
    let r = report(&index(
        &repo,
        &format!("postgres://code_intel:x@127.0.0.1:{port}/code_intel"),
        &model_dir,
    ));
    assert!(
        r["shared"]["status"]
            .as_str()
            .unwrap()
            .contains("Connection refused"),
        "{}",
        r["shared"]
    );
    complete(&r);

    // Not a URL: the text summary says so, the command succeeds.
    let out = Command::new(env!("CARGO_BIN_EXE_code-intel"))
        .arg("index")
        .arg(&repo)
        .env(
            "CODE_INTEL_SHARED_STORE",
            "postgres://user:secret@host:notaport/db",
        )
        .env("CODE_INTEL_MODEL_DIR", &model_dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("shared store")
            && text.contains("not a PostgreSQL URL")
            && text.contains("indexed locally only"),
        "{text}"
    );
    assert!(!text.contains("secret") && !String::from_utf8_lossy(&out.stderr).contains("secret"));

    // A store a newer code-intel migrated is left alone.
    report(&index(&repo, &pg.url, &model_dir));
    pg.psql("UPDATE code_intel_meta SET value = '99' WHERE key = 'schema_version'");
    std::fs::remove_dir_all(repo.join(".code-intel")).unwrap();
    let r = report(&index(&repo, &pg.url, &model_dir));
    let status = r["shared"]["status"].as_str().unwrap();
    assert!(
        status.contains("schema is at version 99") && status.contains("upgrade code-intel"),
        "{status}"
    );
    assert_eq!(r["shared"]["files_from_store"], 0);
    complete(&r);
    assert_eq!(
        pg.psql("SELECT value FROM code_intel_meta WHERE key = 'schema_version'"),
        "99",
        "a newer schema is never touched"
    );
}

fn chunked(i: usize) -> ChunkedFile {
    let chunk = Chunk {
        id: format!("f{i}"),
        kind: "function".into(),
        name: format!("handler_{i}"),
        qualified_name: None,
        parent: None,
        start_line: 1,
        end_line: 3,
        start_byte: 0,
        end_byte: 40,
        content: format!("def handler_{i}():\n    return {i}\n"),
        signature: None,
        docstring: None,
        related_symbols: vec![],
        references: vec![],
        metadata: Metadata::default(),
    };
    ChunkedFile {
        chunks: vec![chunk],
        chunker: "python".into(),
        ..ChunkedFile::default()
    }
}

fn vector(i: usize) -> Vec<f32> {
    (0..384)
        .map(|d| ((i * 31 + d) % 97) as f32 / 97.0)
        .collect()
}

#[test]
fn publishers_at_once_neither_duplicate_nor_corrupt_rows() {
    let pg = Postgres::start();
    // Four publishers connect to an empty database at once (all migrate),
    // then publish overlapping ranges, each twice over.
    let ranges = [0..600, 300..900, 0..900, 850..1000];
    std::thread::scope(|s| {
        for range in ranges.clone() {
            let url = pg.url.clone();
            s.spawn(move || {
                let store = SharedStore::connect(&url).expect("connects and migrates");
                let model = store.model("test-model@r1", 384).unwrap();
                let lists: Vec<(String, String, ChunkedFile)> = range
                    .clone()
                    .map(|i| (format!("hash{i}"), format!("src/m{i}.py"), chunked(i)))
                    .collect();
                let vectors: Vec<(String, Vec<f32>)> = range
                    .clone()
                    .map(|i| (format!("chunk{i}"), vector(i)))
                    .collect();
                for _ in 0..2 {
                    store.publish_chunk_lists("key1", &lists).unwrap();
                    store.publish_vectors(model, &vectors).unwrap();
                }
            });
        }
    });
    let store = SharedStore::connect(&pg.url).unwrap();
    assert_eq!(
        store.counts().unwrap(),
        (1000, 1, 1000),
        "one row per key, whoever published it first"
    );
    let model = store.model("test-model@r1", 384).unwrap();
    assert!(
        store.model("test-model@r1", 768).is_err(),
        "a key keeps its dimension"
    );
    let hashes: Vec<String> = (0..1000).map(|i| format!("chunk{i}")).collect();
    let refs: Vec<&str> = hashes.iter().map(String::as_str).collect();
    let vectors = store.vectors(model, 384, &refs).unwrap();
    assert_eq!(vectors.len(), 1000);
    for i in 0..1000 {
        assert_eq!(
            vectors[&format!("chunk{i}")],
            vector(i),
            "vector {i} intact"
        );
        assert_eq!(
            store
                .chunk_list("key1", &format!("hash{i}"), &format!("src/m{i}.py"))
                .unwrap(),
            Some(chunked(i)),
            "chunk list {i} intact"
        );
    }
    assert_eq!(
        store.chunk_list("key2", "hash1", "src/m1.py").unwrap(),
        None,
        "another chunker key is a miss"
    );
    assert_eq!(
        store.chunk_list("key1", "hash1", "src/other.py").unwrap(),
        None,
        "another path is a miss"
    );
    assert_eq!(pg.psql("SELECT count(*) FROM code_intel_meta"), "1");
}

/// Publishers of the same repository at once (two CI jobs) take turns:
/// whichever publication is last, the repository holds exactly its chunks
/// and aliases, none twice, none of another publication.
#[test]
fn publishers_of_one_repository_at_once_leave_one_whole_publication() {
    let pg = Postgres::start();
    let publication = |n: usize| -> Vec<code_intel_shared::RepoChunk> {
        (0..n)
            .map(|i| {
                let mut chunk = repo_chunk(&format!("app/Tables/T{i}.php"), &format!("T{i}"), "a table of records");
                if i % 3 == 0 {
                    chunk.aliases = vec![format!("t{i} list"), format!("t{i} table")];
                }
                chunk
            })
            .collect()
    };
    let sizes = [300, 450, 600];
    std::thread::scope(|s| {
        for n in sizes {
            let url = pg.url.clone();
            let chunks = publication(n);
            s.spawn(move || {
                let store = SharedStore::connect(&url).expect("connects and migrates");
                for _ in 0..3 {
                    store.publish_repository("shop", &chunks).unwrap();
                }
            });
        }
    });
    let chunks: usize = pg.psql("SELECT count(*) FROM repository_chunks").parse().unwrap();
    assert!(sizes.contains(&chunks), "{chunks} chunks: not one publication");
    let distinct = pg.psql("SELECT count(DISTINCT (path, chunk_id)) FROM repository_chunks");
    assert_eq!(distinct, chunks.to_string(), "no chunk twice");
    let aliases = pg.psql("SELECT count(*) FROM repository_aliases");
    assert_eq!(aliases, (chunks.div_ceil(3) * 2).to_string(), "the aliases of that publication");
    let current = pg.psql(
        "SELECT count(*) FROM repository_aliases a JOIN repositories r ON r.id = a.repository_id AND r.published_at = a.published_at \
         JOIN repository_chunks c ON c.repository_id = a.repository_id AND c.path = a.path AND c.chunk_id = a.chunk_id",
    );
    assert_eq!(current, aliases, "every alias of the current publication, of a chunk it holds");
    let store = SharedStore::connect(&pg.url).unwrap();
    let read = store.aliases(&store.scope(&[]).unwrap()).unwrap();
    assert_eq!(read.len().to_string(), aliases);
    assert!(read.iter().all(|a| a.chunk.repository == "shop" && (a.alias.ends_with(" list") || a.alias.ends_with(" table"))));
}

/// Connections the store's owner holds open.
fn connections(pg: &Postgres) -> String {
    pg.psql("SELECT count(*) FROM pg_stat_activity WHERE usename = 'code_intel' AND backend_type = 'client backend'")
}

/// A published chunk named `name` at `path` holding `content`, its words
/// made as `code-intel index` makes them (path, name, content).
fn repo_chunk(path: &str, name: &str, content: &str) -> code_intel_shared::RepoChunk {
    code_intel_shared::RepoChunk {
        path: path.to_string(),
        chunk_id: format!("{path}#{name}"),
        kind: "function".into(),
        name: name.to_string(),
        start_line: 1,
        end_line: 2,
        content_hash: format!("{path}#{name}"),
        words: code_intel_shared::chunk_words(&format!("{path} {name} {content}")),
        aliases: Vec::new(),
    }
}

#[test]
fn a_search_runs_its_keyword_arm_on_a_second_connection_or_on_the_one() {
    use code_intel_shared::{FullTextQuery, RepoChunk, SearchOutcome};
    let pg = Postgres::start();
    let store = SharedStore::connect(&pg.url).unwrap();
    let chunks: Vec<RepoChunk> = (0..40)
        .map(|i| {
            let content = format!("def refund_order_{i}(order):\n    return order.total * {i}\n");
            repo_chunk(&format!("shop/refunds_{i}.py"), &format!("refund_order_{i}"), &content)
        })
        .collect();
    store.publish_repository("shop", &chunks).unwrap();
    let scope = store.scope(&[]).unwrap();
    let text = FullTextQuery::new("refund the order total");
    let alone = store.search(&text, None, &scope, 10).unwrap();
    assert_eq!(alone.hits.len(), 10, "{alone:?}");
    assert_eq!(connections(&pg), "1");
    // The second connection answers as the first does.
    let spare = store.spare().expect("a second connection");
    assert_eq!(connections(&pg), "2");
    let beside = SearchOutcome::fused(spare.keyword_arm(&text, &scope).unwrap(), store.vector_arm(None, &scope).unwrap(), 10);
    let paths = |o: &SearchOutcome| o.hits.iter().map(|h| h.path.clone()).collect::<Vec<_>>();
    assert_eq!(paths(&beside), paths(&alone));
    assert!(std::ptr::eq(store.spare().unwrap(), spare), "opened once, then kept");
    drop(store);
    // A role allowed one connection: no second one, and searches go on
    // with the first.
    pg.psql("ALTER ROLE code_intel CONNECTION LIMIT 1");
    let store = SharedStore::connect(&pg.url).unwrap();
    assert!(store.spare().is_none());
    let again = SearchOutcome::fused(store.keyword_arm(&text, &scope).unwrap(), store.vector_arm(None, &scope).unwrap(), 10);
    assert_eq!(paths(&again), paths(&alone));
}

#[test]
fn an_any_word_search_weighs_the_common_words_of_a_request_too() {
    use code_intel_shared::{FullTextQuery, RepoChunk};
    let pg = Postgres::start();
    let store = SharedStore::connect(&pg.url).unwrap();
    let chunk = |i: usize, content: &str| repo_chunk(&format!("wiki/part_{i}.py"), &format!("part_{i}"), content);
    // `page`, `edit` and `user` are each in about a fifth of the chunks
    // (common: no search finds by them); `warning`, `minutes` and `window`
    // in one or two.
    let mut chunks: Vec<RepoChunk> = (0..40)
        .map(|i| chunk(i, if i % 5 == 0 { "page edit user filler" } else { "filler" }))
        .collect();
    chunks[1] = chunk(1, "warning when a user is editing the page: edit activity, minutes");
    chunks[2] = chunk(2, "the minutes of the window");
    chunks[3] = chunk(3, "a warning");
    store.publish_repository("wiki", &chunks).unwrap();
    let scope = store.scope(&[]).unwrap();
    let text = FullTextQuery::new("the warning of users editing a page considers edits of the last minutes of the window");
    let arm = store.keyword_arm(&text, &scope).unwrap();
    assert!(!arm.every_word, "no chunk holds every word");
    let found: Vec<&str> = arm.rows.iter().map(|h| h.path.as_str()).collect();
    // Two rare words alone (`minutes`, `window`) weigh less than one
    // (`warning`, `minutes`) with the request's common words beside it.
    assert_eq!(found.first(), Some(&"wiki/part_1.py"), "{found:?}");
    assert_eq!(found.get(1), Some(&"wiki/part_2.py"), "{found:?}");
    assert!(!found.contains(&"wiki/part_5.py"), "common words alone find nothing: {found:?}");
}

#[test]
fn quoted_text_is_found_as_a_phrase() {
    use code_intel_shared::{FullTextQuery, RepoChunk};
    let pg = Postgres::start();
    let store = SharedStore::connect(&pg.url).unwrap();
    let chunks: Vec<RepoChunk> = ["class ItemUpdatedNotification extends Notification", "the item was updated", "updated the item"]
        .iter()
        .enumerate()
        .map(|(i, content)| repo_chunk(&format!("app/part_{i}.php"), &format!("Part{i}"), content))
        .collect();
    store.publish_repository("app", &chunks).unwrap();
    let scope = store.scope(&[]).unwrap();
    let phrase = FullTextQuery::phrase("item updated").unwrap();
    let found = store.phrase_arm(&phrase, &scope).unwrap();
    let paths: Vec<&str> = found.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(paths, ["app/part_0.php"], "the words side by side, in order");
    assert!(found[0].quoted.is_some_and(|s| s > 0.0) && found[0].keyword_score.is_none());
    assert_eq!(found[0].arms, ["keyword"]);
    // Text in thousands of chunks is no sign of where the answer is.
    let many: Vec<RepoChunk> = (0..2_001).map(|i| repo_chunk(&format!("lib/m{i}.php"), &format!("M{i}"), "an item zebra")).collect();
    store.publish_repository("many", &many).unwrap();
    let everywhere = store.scope(&[]).unwrap();
    assert!(store.phrase_arm(&FullTextQuery::phrase("item zebra").unwrap(), &everywhere).unwrap().is_empty());
    assert_eq!(store.phrase_arm(&phrase, &everywhere).unwrap().len(), 1, "rarer text is still found");
}

#[test]
fn neighbouring_words_are_found_near_each_other() {
    use code_intel_search::pairs::{NEAR, pairs};
    use code_intel_shared::{RepoChunk, words::near_pair};
    let pg = Postgres::start();
    let store = SharedStore::connect(&pg.url).unwrap();
    let contents = [
        "def redirect_slashes(self): strip the trailing slash",
        "the slash of a trailing redirect",
        "trailing whitespace is removed long before the parser reads a slash",
    ];
    let chunks: Vec<RepoChunk> =
        contents.iter().enumerate().map(|(i, content)| repo_chunk(&format!("app/part_{i}.py"), &format!("Part{i}"), content)).collect();
    store.publish_repository("app", &chunks).unwrap();
    let pairs: Vec<String> = pairs("the trailing slash redirects are temporary")
        .iter()
        .map(|(a, b)| {
            near_pair((&a.text, a.prefix), (&b.text, b.prefix), NEAR)
        })
        .collect();
    let among: Vec<(&str, &str, &str)> = chunks.iter().map(|c| ("app", c.path.as_str(), c.chunk_id.as_str())).rev().collect();
    let mut held = store.pairs_among(&pairs, &among).unwrap();
    held.sort_by_key(|(i, _)| *i);
    // Side by side, or in the other order one word apart; not far apart.
    // (`among` is in reverse: part 2 first.)
    assert_eq!(held.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1, 2], "{held:?}");
    assert!(held.iter().all(|(_, score)| *score > 0.0));
    assert!(store.pairs_among(&[], &among).unwrap().is_empty());
    assert!(store.pairs_among(&pairs, &[("other", "app/part_0.py", &chunks[0].chunk_id)]).unwrap().is_empty(), "another repository's");
}

/// What a plugin says a request calls a chunk (a Filament table's `products
/// list`) is published with the repository, replaced when it is published
/// again, and names the chunk as its identifier would: "the products list"
/// puts the table's file first, where the arms alone do not.
#[test]
fn organisation_wide_search_knows_what_requests_call_a_chunk() {
    let Some(model_dir) = embed_support::real_model_dir("organisation_wide_search_knows_what_requests_call_a_chunk") else {
        return;
    };
    const TABLE: &str = "app/Filament/Clusters/Catalog/Resources/Products/Tables/ProductsTable.php";
    let pg = Postgres::start();
    let tmp = tempfile::tempdir().unwrap();
    let shop = tmp.path().join("shop");
    copy_dir(&embed_support::fixture_dir().parent().unwrap().join("laravel-app"), &shop);
    report(&index(&shop, &pg.url, &model_dir));
    let aliases = |path: &str| {
        pg.psql(&format!("SELECT string_agg(alias, ',' ORDER BY alias) FROM repository_aliases WHERE path = '{path}'"))
    };
    assert_eq!(aliases(TABLE), "products list,products table", "the Filament plugin is not built? run `cargo xtask plugins` first");
    let before = pg.psql("SELECT count(*) FROM repository_aliases");
    report(&index(&shop, &pg.url, &model_dir));
    // Published again: every row is of the new publication, and as many.
    let current = "SELECT count(*) FROM repository_aliases a \
                   JOIN repositories r ON r.id = a.repository_id AND r.published_at = a.published_at";
    assert_eq!(pg.psql(current), before, "published again: replaced, never duplicated");
    assert_eq!(pg.psql("SELECT count(*) FROM repository_aliases"), before);

    let first_file = || -> Value {
        let out = search_shared(tmp.path(), &pg.url, &model_dir, "hide inactive products in the products list");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["no_confident_match"], false, "{r}");
        r["results"][0].clone()
    };
    let top = first_file();
    assert_eq!(top["path"], TABLE, "{top}");
    assert_eq!(top["kind"], "filament_table", "{top}");
    // A Japanese request is also searched read in English, as locally.
    let out = search_shared(tmp.path(), &pg.url, &model_dir, "商品一覧で無効な商品を非表示にしたい");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["no_confident_match"], false, "{r}");
    let english = r["shared"]["english_query"].as_str().unwrap_or_default();
    for word in ["products", "list", "disabled", "hide"] {
        assert!(english.split(' ').any(|w| w == word), "{word} in {english:?}: {r}");
    }
    // Aliases of an earlier publication (as after one by an older
    // code-intel, which records none) are stale: the arms alone put another
    // file first.
    pg.psql("UPDATE repository_aliases SET published_at = published_at - interval '1 second'");
    let top = first_file();
    assert_ne!(top["path"], TABLE, "{top}");
}

fn search_shared(cwd: &Path, store: &str, model_dir: &Path, query: &str) -> Output {
    search_shared_with(cwd, store, model_dir, query, &["--shared"])
}

fn search_shared_with(cwd: &Path, store: &str, model_dir: &Path, query: &str, options: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_code-intel"))
        .args(["search", "--json", "-n", "5"])
        .args(options)
        .arg(query)
        .current_dir(cwd)
        .env("CODE_INTEL_SHARED_STORE", store)
        .env("CODE_INTEL_MODEL_DIR", model_dir)
        .env("CODE_INTEL_ENGLISH_MODEL_DIR", english_model_dir())
        .env_remove("CODE_INTEL_EMBEDDING_ENDPOINT")
        .output()
        .unwrap()
}

#[test]
fn organisation_wide_search_names_the_repository_of_each_hit() {
    let Some(model_dir) =
        embed_support::real_model_dir("organisation_wide_search_names_the_repository_of_each_hit")
    else {
        return;
    };
    let pg = Postgres::start();
    let tmp = tempfile::tempdir().unwrap();
    let (shop, tools) = (tmp.path().join("shop"), tmp.path().join("tools"));
    copy_dir(&embed_support::fixture_dir(), &shop);
    copy_dir(
        &embed_support::fixture_dir()
            .parent()
            .unwrap()
            .join("mini-repo"),
        &tools,
    );
    // Japanese text, which the store matches by its character pairs.
    std::fs::write(
        shop.join("app/removal.py"),
        "def confirm(user):\n    # ユーザーを削除する前に確認する\n    return user.active\n",
    )
    .unwrap();
    // A name the request says in katakana (no word of the glossary).
    std::fs::create_dir_all(shop.join("app/hatchery")).unwrap();
    std::fs::write(
        shop.join("app/hatchery/incubator.py"),
        "class Incubator:\n    def set_temperature(self, degrees):\n        self.degrees = degrees\n",
    )
    .unwrap();
    for repo in [&shop, &tools] {
        let r = report(&index(repo, &pg.url, &model_dir));
        assert_eq!(
            r["shared"]["repository"],
            repo.file_name().unwrap().to_str().unwrap(),
            "{}",
            r["shared"]
        );
        assert_eq!(r["shared"]["repository_chunks"], r["total_chunks"]);
    }
    // Publishing again replaces, never duplicates.
    let before = pg.psql("SELECT count(*) FROM repository_chunks");
    report(&index(&shop, &pg.url, &model_dir));
    assert_eq!(pg.psql("SELECT count(*) FROM repository_chunks"), before);
    assert_eq!(pg.psql("SELECT count(*) FROM repositories"), "2");
    // Publishing vacuums the chunks, so their rows count through the index alone.
    assert_eq!(pg.psql("SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'repository_chunks'"), "t");

    let results = |query: &str| -> Value {
        let out = search_shared(tmp.path(), &pg.url, &model_dir, query);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // A question in other words than the code's.
    let r = results("where do people sign in");
    assert_eq!(r["shared"]["repositories"], 2);
    assert_eq!(r["shared"]["vector_search"], "ready", "{r}");
    let top = &r["results"][0];
    assert_eq!(
        (top["repository"].as_str(), top["path"].as_str()),
        (Some("shop"), Some("app/auth/session.py")),
        "{r}"
    );
    assert!(
        top["arms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "vector"),
        "{r}"
    );
    assert_eq!(r["no_confident_match"], false, "{r}");
    // Its similarity calibrated as local hits' `vector_score`.
    let score = top["vector_score"].as_f64().unwrap_or_else(|| panic!("vector_score in {r}"));
    assert!((0.2..=1.0).contains(&score), "{r}");
    // Without a local index, the anchors' vectors are kept in the cache
    // folder: the next search reads them instead of embedding them again.
    let cache = tmp.path().join("cache");
    let anchors = |query: &str| -> (Value, Vec<(std::path::PathBuf, std::time::SystemTime)>) {
        let out = Command::new(env!("CARGO_BIN_EXE_code-intel"))
            .args(["search", "--json", "-n", "5", "--shared", query])
            .current_dir(tmp.path())
            .env("CODE_INTEL_SHARED_STORE", &pg.url)
            .env("CODE_INTEL_MODEL_DIR", &model_dir)
            .env("CODE_INTEL_ENGLISH_MODEL_DIR", english_model_dir())
            .env("CODE_INTEL_CACHE_DIR", &cache)
            .env_remove("CODE_INTEL_EMBEDDING_ENDPOINT")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let files = std::fs::read_dir(cache.join("anchors"))
            .map(|d| d.flatten().map(|e| (e.path(), e.metadata().unwrap().modified().unwrap())).collect())
            .unwrap_or_default();
        (serde_json::from_slice(&out.stdout).unwrap(), files)
    };
    let (first, kept) = anchors("where do people sign in");
    assert!(!kept.is_empty() && kept.iter().all(|(f, _)| f.extension().is_some_and(|e| e == "f32")), "{kept:?}");
    let (again, still) = anchors("where do people sign in");
    assert_eq!(still, kept, "read, not written again");
    assert_eq!(again["results"], first["results"]);
    assert_eq!(first["results"][0]["vector_score"], r["results"][0]["vector_score"], "{first}");
    // Gibberish and everyday talk are no confident match, as locally:
    // no hits, and the reason.
    for (query, why) in [
        ("qwxz zzkv plorf 7731", "no words the model knows"),
        ("how many moons does jupiter have", "everyday language"),
        ("明日の東京の天気を教えてください", "everyday language"),
    ] {
        let r = results(query);
        assert_eq!(r["no_confident_match"], true, "{query}: {r}");
        assert!(r["results"].as_array().unwrap().is_empty(), "{query}: {r}");
        assert!(r["message"].as_str().unwrap().contains(why), "{query}: {r}");
    }
    // Within one repository too.
    let out = search_shared_with(tmp.path(), &pg.url, &model_dir, "qwxz zzkv plorf 7731", &["--shared", "--repository", "shop"]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["no_confident_match"], true, "{r}");
    // An identifier of the other repository.
    let r = results("UserService rename");
    let top = &r["results"][0];
    assert_eq!(
        (top["repository"].as_str(), top["path"].as_str()),
        (Some("tools"), Some("app/services.py")),
        "{r}"
    );
    assert!(
        top["arms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "keyword"),
        "{r}"
    );

    // Limited to named repositories: the identifier of the other one is
    // not found outside it, by the name or its last part.
    let only = |query: &str, options: &[&str]| -> Value {
        let out = search_shared_with(tmp.path(), &pg.url, &model_dir, query, options);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let r = only("UserService rename", &["--shared", "--repository", "shop"]);
    assert_eq!(r["shared"]["repositories"], 1, "{r}");
    assert_eq!(r["shared"]["searched"], serde_json::json!(["shop"]), "{r}");
    let hits = r["results"].as_array().unwrap();
    assert!(hits.iter().all(|h| h["repository"] == "shop"), "{r}");
    let r = only("where do people sign in", &["--shared", "--repository", "tools"]);
    let hits = r["results"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.iter().all(|h| h["repository"] == "tools"), "{r}");
    assert!(hits.iter().any(|h| h["arms"].as_array().unwrap().iter().any(|a| a == "vector")), "the vector arm searches the named repository: {r}");
    let r = only("UserService rename", &["--shared", "--repository", "SHOP", "--repository", "tools"]);
    assert_eq!(r["shared"]["searched"], serde_json::json!(["shop", "tools"]), "{r}");
    assert_eq!(
        (r["results"][0]["repository"].as_str(), r["results"][0]["path"].as_str()),
        (Some("tools"), Some("app/services.py")),
        "{r}"
    );
    // The vector arm of a scope, by either way of finding its nearest
    // texts (the scope compared text by text, or the index's nearest that
    // it holds): a published text of `tools` is its own nearest.
    let store = code_intel_shared::SharedStore::connect(&pg.url).unwrap();
    let row = pg.psql(
        "SELECT m.key || '|' || c.path || '|' || c.chunk_id || '|' || e.embedding::text FROM embeddings e \
         JOIN models m ON m.id = e.model_id JOIN repository_chunks c ON c.content_hash = e.content_hash \
         JOIN repositories r ON r.id = c.repository_id WHERE r.name = 'tools' ORDER BY c.path, c.chunk_id, m.key LIMIT 1",
    );
    let fields: Vec<&str> = row.splitn(4, '|').collect();
    let vector: Vec<f32> = fields[3].trim_matches(['[', ']']).split(',').map(|x| x.parse().unwrap()).collect();
    for exact_up_to in [1_000_000, 0] {
        let scope = store.scope(&["tools".to_string()]).unwrap().scanning_at_most(exact_up_to);
        let outcome = store
            .search(&code_intel_shared::FullTextQuery::new("zzqxnothing"), Some((fields[0], &vector)), &scope, 50)
            .unwrap();
        assert_eq!(outcome.vector_status, "ready");
        assert!(!outcome.hits.is_empty() && outcome.hits.iter().all(|h| h.repository == "tools"), "{exact_up_to}: {:?}", outcome.hits);
        let best = outcome.hits.iter().max_by(|a, b| a.similarity.unwrap().total_cmp(&b.similarity.unwrap())).unwrap();
        assert!(best.similarity.unwrap() > 0.999, "{exact_up_to}: {best:?}");
        assert!(outcome.hits.iter().any(|h| h.path == fields[1] && h.chunk_id == fields[2]), "{exact_up_to}: {:?}", outcome.hits);
    }

    // A name nothing is published under: an error listing what is.
    let out = search_shared_with(tmp.path(), &pg.url, &model_dir, "login", &["--shared", "--repository", "shopp"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("no repository named \"shopp\"") && stderr.contains("published: shop, tools"), "{stderr}");
    // `--repository` names published repositories: only with `--shared`.
    let out = search_shared_with(tmp.path(), &pg.url, &model_dir, "login", &["--repository", "shop"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("--shared"), "{stderr}");

    // An any-word search ranks by the words that are not in a large share
    // of the chunks (every function of the Python fixtures says `def`),
    // keeping at least the three rarest the store knows.
    let store = code_intel_shared::SharedStore::connect(&pg.url).unwrap();
    let text = code_intel_shared::FullTextQuery::new("zebra def userservice rename self quokka");
    let rare = store.any_word_clauses(&text).unwrap();
    assert!(!rare.iter().any(|w| w == "'def'" || w == "'zebra'" || w == "'quokka'"), "{rare:?}");
    for word in ["'userservice'", "'rename'"] {
        assert!(rare.iter().any(|w| w.contains(word)), "{word} in {rare:?}");
    }

    // Words match as in the local index: a plain word also by its stem as
    // a prefix (`renamed` finds `rename`), and no chunk needs to hold every
    // word (`frobnicated` is in none): the rarer ones rank.
    // Both files that rename a user hold `rename` and `services` (the one
    // in its path, the other in its import): they come first, each found
    // by keyword.
    let r = results("renamed services frobnicated");
    let by_keyword = |h: &&Value| h["arms"].as_array().unwrap().iter().any(|a| a == "keyword");
    // A file's hits follow one another: the files in order, once each.
    let mut files: Vec<(&str, &str)> =
        r["results"].as_array().unwrap().iter().map(|h| (h["repository"].as_str().unwrap(), h["path"].as_str().unwrap())).collect();
    files.dedup();
    let first_two = &files[..2];
    assert!(first_two.contains(&("tools", "app/services.py")) && first_two.contains(&("tools", "app/views.py")), "{r}");
    for path in ["app/services.py", "app/views.py"] {
        assert!(r["results"].as_array().unwrap().iter().filter(|h| h["path"] == path).any(|h| by_keyword(&h)), "{path}: {r}");
    }
    // A chunk's words are the local index's (identifiers and their parts),
    // which an older code-intel's query (`to_tsquery('simple', ...)` of the
    // lower-cased words and parts) still matches.
    assert_ne!(
        pg.psql("SELECT count(*) FROM repository_chunks WHERE words @@ to_tsquery('simple', 'userservice & user <-> service')"),
        "0"
    );
    assert_eq!(r["shared"]["older_words"], 0, "{r}");
    // A word inside a run of Japanese text, found by keyword.
    let r = results("削除する前に");
    let top = &r["results"][0];
    assert_eq!((top["repository"].as_str(), top["path"].as_str()), (Some("shop"), Some("app/removal.py")), "{r}");
    assert!(top["arms"].as_array().unwrap().iter().any(|a| a == "keyword"), "{r}");
    // Katakana read against the words the published repositories name
    // things with (recorded when each is published): インキュベーター is
    // `incubator`, which the keyword arm then finds.
    assert_eq!(
        pg.psql("SELECT 'incubator' = ANY(words) FROM repository_name_words JOIN repositories r ON r.id = repository_id WHERE r.name = 'shop'"),
        "t"
    );
    // (The request's other words are none of the file's.)
    let r = results("インキュベーターの画面を削除したい");
    let hit = r["results"].as_array().unwrap().iter().find(|h| h["path"] == "app/hatchery/incubator.py");
    assert!(hit.is_some_and(|h| h["arms"].as_array().unwrap().iter().any(|a| a == "keyword")), "{r}");
    // A repository published by an older code-intel (its chunks' words at
    // version 1) is named until it is published again.
    pg.psql("UPDATE repository_chunks SET words_version = 1 WHERE repository_id = (SELECT id FROM repositories WHERE name = 'shop')");
    assert_eq!(results("削除する前に")["shared"]["older_words"], 1);
    report(&index(&shop, &pg.url, &model_dir));
    assert_eq!(results("削除する前に")["shared"]["older_words"], 0);

    // A request in English is embedded by the English model once every
    // repository has its vectors, as locally; one in Japanese by the main
    // model; a repository published again without recording the English
    // model's vectors (as an older code-intel publishes) sends every
    // request to the main model.
    if english_model_dir().is_dir() {
        let model = |r: &Value| r["shared"]["vector_model"].as_str().unwrap_or_default().to_string();
        let r = results("where do people sign in");
        assert!(model(&r).contains("MiniLM"), "{r}");
        assert_eq!(
            (r["results"][0]["repository"].as_str(), r["results"][0]["path"].as_str()),
            (Some("shop"), Some("app/auth/session.py")),
            "{r}"
        );
        assert!(!model(&results("ユーザーのログイン")).contains("MiniLM"));
        pg.psql("UPDATE repositories SET published_at = now() WHERE name = 'tools'");
        assert!(!model(&results("where do people sign in")).contains("MiniLM"));
        report(&index(&tools, &pg.url, &model_dir));
        assert!(model(&results("where do people sign in")).contains("MiniLM"));
    }

    // A checkout named by config `shared_repository` (what tells apart two
    // clones whose remotes are local paths ending in the same folder).
    let named = tmp.path().join("named");
    copy_dir(
        &embed_support::fixture_dir()
            .parent()
            .unwrap()
            .join("mini-repo"),
        &named,
    );
    std::fs::create_dir_all(named.join(".code-intel")).unwrap();
    std::fs::write(
        named.join(".code-intel/config.json"),
        r#"{"shared_repository": "github.com/acme/tools"}"#,
    )
    .unwrap();
    let r = report(&index(&named, &pg.url, &model_dir));
    assert_eq!(r["shared"]["repository"], "github.com/acme/tools", "{}", r["shared"]);
    assert_eq!(pg.psql("SELECT count(*) FROM repositories"), "3");
    let r = results("UserService rename");
    assert!(
        r["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["repository"] == "github.com/acme/tools"),
        "{r}"
    );

    // The store down: the local index of the current repository answers,
    // with a note, and the command succeeds.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = search_shared(
        &shop,
        &format!("postgres://code_intel:x@127.0.0.1:{port}/code_intel"),
        &model_dir,
        "where do users log in",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("searching this repository's local index only")
    );
    let local: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(local.to_string().contains("app/auth/session.py"), "{local}");
}

/// `code-intel serve` over stdio, spoken to line by line.
struct Serve {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Serve {
    /// Starts the server on `repo` (no start-up sync) with `store` as the
    /// shared store (none: no store configured) and completes the handshake.
    fn start(repo: &Path, store: Option<&str>, model_dir: &Path) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_code-intel"));
        command
            .args(["serve", "--no-sync", "--repo"])
            .arg(repo)
            .env("CODE_INTEL_MODEL_DIR", model_dir)
            .env("CODE_INTEL_ENGLISH_MODEL_DIR", english_model_dir())
            .env_remove("CODE_INTEL_EMBEDDING_ENDPOINT")
            .env_remove("CODE_INTEL_SHARED_STORE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(store) = store {
            command.env("CODE_INTEL_SHARED_STORE", store);
        }
        let mut child = command.spawn().unwrap();
        let mut serve = Self {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            next_id: 0,
        };
        serve.request(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        serve.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        serve
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns its result (notifications are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "serve closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    /// `semantic_search` with `arguments`: (is error, structured content, text).
    fn search(&mut self, arguments: Value) -> (bool, Value, String) {
        let r = self.request("tools/call", serde_json::json!({"name": "semantic_search", "arguments": arguments}));
        let text = r["content"][0]["text"].as_str().unwrap_or_default().to_string();
        (r["isError"] == true, r["structuredContent"].clone(), text)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn semantic_search_with_shared_searches_every_published_repository() {
    let Some(model_dir) = embed_support::real_model_dir(
        "semantic_search_with_shared_searches_every_published_repository",
    ) else {
        return;
    };
    let pg = Postgres::start();
    let tmp = tempfile::tempdir().unwrap();
    let (shop, tools) = (tmp.path().join("shop"), tmp.path().join("tools"));
    copy_dir(&embed_support::fixture_dir(), &shop);
    copy_dir(
        &embed_support::fixture_dir()
            .parent()
            .unwrap()
            .join("mini-repo"),
        &tools,
    );
    for repo in [&shop, &tools] {
        report(&index(repo, &pg.url, &model_dir));
    }

    let mut serve = Serve::start(&shop, Some(&pg.url), &model_dir);
    let tools_list = serve.request("tools/list", serde_json::json!({}));
    let semantic = tools_list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "semantic_search")
        .unwrap();
    assert_eq!(semantic["inputSchema"]["properties"]["shared"]["type"], "boolean", "{semantic}");
    assert!(semantic["outputSchema"]["properties"].get("shared").is_some(), "{semantic}");

    // Once the models have loaded (a search waits for them only briefly):
    // before, the keyword arm answers alone, or the main model, whose
    // similarity to this English request may stay under the confidence
    // floor.
    let mut answer = Value::Null;
    for _ in 0..60 {
        let (error, r, text) = serve.search(serde_json::json!({"query": "where do people sign in", "shared": true, "n_results": 5}));
        assert!(!error, "{text}");
        answer = r;
        if answer["vector_search"] == "ready" && answer["results"].as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }

    // An identifier of the other repository: found there, and named.
    let (error, r, text) = serve.search(serde_json::json!({"query": "UserService rename", "shared": true, "n_results": 5}));
    assert!(!error, "{text}");
    assert_eq!(r["shared"]["status"], "searched", "{r}");
    assert_eq!(r["shared"]["repositories"], 2, "{r}");
    assert_eq!(
        r["shared"]["store"].as_str().unwrap(),
        format!("postgres://code_intel@127.0.0.1:{}/code_intel", pg.port())
    );
    assert!(!r.to_string().contains(password(&pg.url)) && !text.contains(password(&pg.url)));
    let top = &r["results"][0];
    assert_eq!(
        (top["repository"].as_str(), top["path"].as_str(), top["file_rank"].as_u64()),
        (Some("tools"), Some("app/services.py"), Some(1)),
        "{r}"
    );
    assert!(
        r["results"].as_array().unwrap().iter().all(|h| h["repository"].is_string()),
        "every hit names its repository: {r}"
    );
    assert!(text.contains("tools  app/services.py:"), "{text}");

    // A question in other words than the code's: found in this
    // repository (the model loaded above).
    assert_eq!(answer["mode"], "hybrid", "{answer}");
    let top = &answer["results"][0];
    assert_eq!(
        (top["repository"].as_str(), top["path"].as_str()),
        (Some("shop"), Some("app/auth/session.py")),
        "{answer}"
    );
    assert_ne!(top["source"], "lexical", "{answer}");

    assert!(top["vector_score"].as_f64().is_some_and(|s| s >= 0.2), "calibrated: {answer}");
    // Gibberish: no confident match, and why.
    let (error, r, text) = serve.search(serde_json::json!({"query": "qwxz zzkv plorf 7731", "shared": true}));
    assert!(!error, "{text}");
    assert!(r["results"].as_array().unwrap().is_empty(), "{r}");
    assert!(r["notes"].to_string().contains("no confident match"), "{r}");

    // Limited to named repositories.
    let (error, r, text) = serve.search(serde_json::json!({"query": "where do people sign in", "shared": true, "repositories": ["shop"], "n_results": 5}));
    assert!(!error, "{text}");
    assert_eq!((r["shared"]["repositories"].as_i64(), &r["shared"]["searched"]), (Some(1), &serde_json::json!(["shop"])), "{r}");
    let hits = r["results"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.iter().all(|h| h["repository"] == "shop"), "{r}");
    let (error, r, text) = serve.search(serde_json::json!({"query": "UserService rename", "shared": true, "repositories": ["tools"], "n_results": 5}));
    assert!(!error, "{text}");
    assert_eq!((r["results"][0]["repository"].as_str(), r["results"][0]["path"].as_str()), (Some("tools"), Some("app/services.py")), "{r}");
    for (arguments, says) in [
        (serde_json::json!({"query": "login", "shared": true, "repositories": ["nope"]}), "published: shop, tools"),
        (serde_json::json!({"query": "login", "shared": true, "repositories": []}), "is empty"),
        (serde_json::json!({"query": "login", "repositories": ["shop"]}), "shared=true"),
    ] {
        let (error, _, text) = serve.search(arguments);
        assert!(error && text.contains("repositories") && text.contains(says), "{text}");
    }

    // Filters of this repository's index are refused by name.
    for (arguments, named) in [
        (serde_json::json!({"query": "login", "shared": true, "collection": "map"}), "collection"),
        (serde_json::json!({"query": "login", "shared": true, "path": "app"}), "path"),
    ] {
        let (error, _, text) = serve.search(arguments);
        assert!(error && text.contains(named), "{text}");
    }

    // The store goes away: this repository's index answers, and says so.
    drop(pg);
    let (error, r, text) = serve.search(serde_json::json!({"query": "where do users log in", "shared": true, "n_results": 5}));
    assert!(!error, "{text}");
    let status = r["shared"]["status"].as_str().unwrap();
    assert!(status.starts_with("unavailable: "), "{r}");
    assert!(
        r["notes"][0].as_str().unwrap().contains("answered from this repository's index only"),
        "{r}"
    );
    assert!(text.contains("answered from this repository's index only"), "{text}");
    let top = &r["results"][0];
    assert_eq!(
        (top["repository"].as_str(), top["path"].as_str()),
        (Some("shop"), Some("app/auth/session.py")),
        "{r}"
    );
    drop(serve);

    // No store configured: the same, with what to set.
    let mut serve = Serve::start(&shop, None, &model_dir);
    let (error, r, text) = serve.search(serde_json::json!({"query": "UserService rename", "shared": true}));
    assert!(!error, "{text}");
    assert_eq!(r["shared"]["status"], "off", "{r}");
    assert!(r["notes"][0].as_str().unwrap().contains("CODE_INTEL_SHARED_STORE"), "{r}");
    assert!(r["results"].as_array().unwrap().iter().all(|h| h["repository"] == "shop"), "{r}");
    // Without `shared`, nothing changes: no repository, no `shared`.
    let (_, r, _) = serve.search(serde_json::json!({"query": "UserService rename"}));
    assert!(r.get("shared").is_none() && r["results"][0].get("repository").is_none(), "{r}");
}

/// Counts the files it chunks (one line chunk each).
#[derive(Default)]
struct Counting(std::sync::atomic::AtomicUsize);

impl code_intel_core::Chunker for Counting {
    fn chunk_file(&self, path: &str, content: &str) -> ChunkedFile {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ChunkedFile {
            chunks: code_intel_core::line_chunks(path, content),
            chunker: "lines".into(),
            ..ChunkedFile::default()
        }
    }
}

#[test]
fn a_sync_takes_its_chunk_lists_in_a_few_round_trips() {
    use code_intel_core::Chunker;
    use code_intel_shared::SharedChunker;
    let pg = Postgres::start();
    let store = SharedStore::connect(&pg.url).unwrap();
    let content = |i: usize, version: usize| format!("def f{i}():\n    return {version}\n");
    let paths: Vec<String> = (0..1200).map(|i| format!("src/m{i}.py")).collect();

    // CI publishes version 1 of every file, then version 2 of the first ten.
    for version in [1, 2] {
        let inner = Counting::default();
        let chunker = SharedChunker::new(&inner, &store, "key".into());
        let n = if version == 1 { paths.len() } else { 10 };
        for (i, path) in paths.iter().enumerate().take(n) {
            chunker.chunk_file(path, &content(i, version));
        }
        let report = chunker.finish();
        assert_eq!(store.publish_chunk_lists("key", &report.to_publish).unwrap(), n as u64);
    }
    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let newest = store.newest_chunk_lists("key", &refs[..20]).unwrap();
    assert_eq!(newest.len(), 20);

    // A checkout at version 1 of files 0-4 and 2 of 5-9, files 10-1199 at
    // version 1 except 10-14 edited locally, and a file never published.
    let inner = Counting::default();
    let chunker = SharedChunker::new(&inner, &store, "key".into());
    let mut all = refs.clone();
    all.push("src/new.py");
    let before = store.calls();
    chunker.prepare(&all);
    for (i, path) in paths.iter().enumerate() {
        let version = if i < 5 { 1 } else if i < 10 { 2 } else if i < 15 { 3 } else { 1 };
        let got = chunker.chunk_file(path, &content(i, version));
        assert_eq!(got.chunks, code_intel_core::line_chunks(path, &content(i, version)), "{path}");
    }
    chunker.chunk_file("src/new.py", "x = 1\n");
    let calls = store.calls() - before;
    let report = chunker.finish();
    assert_eq!(report.error, None);
    assert_eq!(report.files_from_store, 1195, "all but the 5 edited files and the new one");
    assert_eq!(inner.0.load(std::sync::atomic::Ordering::SeqCst), 6);
    // 3 batched queries, 5 lookups of an older version, 5 of a local
    // edit: 13, not one per file (1,201).
    assert_eq!(calls, 13, "calls to the store for 1,201 files");
}
