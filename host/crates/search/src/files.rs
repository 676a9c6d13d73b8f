//! File-level ranking: the unit a developer acts on is a file, so ranked
//! chunks are grouped by file, each file is ranked on the evidence of all its
//! chunks, and the arms are fused by their file ranks.
//!
//! - **Per arm**, a file's evidence is its best chunk plus a share of the
//!   next ones ([`file_evidence`]): an answer spread over a class and two of
//!   its methods outranks one stray match.
//! - **Fusion** is reciprocal-rank fusion ([`RRF_K`]) of the arms' file
//!   rankings, plus a ranking of the files that define what the query
//!   names and one of the files holding a phrase the request quotes. Rank fusion needs no common scale between BM25 and similarities,
//!   and a file both arms rank high beats one only a single arm likes, so
//!   the fused order is at least as good as the better arm in practice
//!   (measured in `bench/retrieval`).
//! - **Priors** ([`prior`]): tests, documentation, translations, fixtures,
//!   examples, type declarations (`*.d.ts`), style sheets, page templates,
//!   schema migrations and a web API's files are rarely where the answer to
//!   a change request lives; they are weighed down unless the query asks
//!   about them ("test", "docs", "翻訳", "colour", "画面", "table", "API"...;
//!   tests less, since a request names them mostly as where a bug was seen).
//!
//! Results keep chunk granularity: each file's best chunks follow one another
//! (at most [`CHUNKS_PER_FILE`]), files in fused order, each hit carrying its
//! file's rank.

use std::collections::HashMap;

/// Reciprocal-rank fusion constant: `1 / (K + rank)`. Small enough that the
/// first places of an arm count clearly more than the tenth.
pub const RRF_K: f64 = 10.0;

/// Chunks shown per file (the best ones); the rest of the file's evidence
/// still counts in its rank.
pub const CHUNKS_PER_FILE: usize = 2;

/// Share of a file's second and third best chunk scores added to its best.
const NEXT_CHUNK_SHARE: [f64; 2] = [0.3, 0.15];

/// A file's evidence from one arm: the best chunk score plus a share of the
/// next two (`scores` in any order).
#[must_use]
pub fn file_evidence(scores: &mut [f64]) -> f64 {
    scores.sort_by(|a, b| b.total_cmp(a));
    let mut total = scores.first().copied().unwrap_or(0.0);
    for (share, s) in NEXT_CHUNK_SHARE.iter().zip(scores.iter().skip(1)) {
        total += share * s.max(0.0);
    }
    total
}

/// Files ranked by their evidence from one arm: `(file, chunk score)` pairs
/// in, files best first out.
#[must_use]
pub fn rank_files<'a>(chunks: impl IntoIterator<Item = (&'a str, f64)>) -> Vec<&'a str> {
    let mut by_file: HashMap<&str, Vec<f64>> = HashMap::new();
    for (file, score) in chunks {
        by_file.entry(file).or_default().push(score);
    }
    let mut files: Vec<(&str, f64)> = by_file.into_iter().map(|(f, mut s)| (f, file_evidence(&mut s))).collect();
    files.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    files.into_iter().map(|(f, _)| f).collect()
}

/// Reciprocal-rank fusion of file rankings, each with a weight.
#[must_use]
pub fn fuse_ranks(rankings: &[(&[&str], f64)]) -> HashMap<String, f64> {
    let mut fused: HashMap<String, f64> = HashMap::new();
    for (ranking, weight) in rankings {
        for (i, file) in ranking.iter().enumerate() {
            // Ranks are small: exact in f64.
            #[allow(clippy::cast_precision_loss)]
            let rank = (i + 1) as f64;
            *fused.entry((*file).to_string()).or_default() += weight / (RRF_K + rank);
        }
    }
    fused
}

/// What kind of file a path is, for [`prior`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileRole {
    Source,
    Test,
    Docs,
    Translation,
    Example,
    /// Type declarations only (`*.d.ts`, `*.pyi`): one large file that
    /// resembles every request a little, rarely where behaviour changes.
    Declarations,
    /// Style sheets (`*.css`, `*.scss`, `*.less`, ...): hundreds of short
    /// rules, each a near neighbour of any request to a model, holding the
    /// answer only when the request is about how something looks.
    Stylesheet,
    /// Page templates (`*.blade.php`, `*.html`, `*.twig`, Jinja): they
    /// print the words of a feature (its labels, its help text) without
    /// holding its behaviour, so they come near requests about what the
    /// code does; the answer when the request is about what a page shows.
    Template,
    /// Schema migrations (`database/migrations/`, Django's and Alembic's
    /// `migrations/`, Laravel settings migrations in `database/settings/`):
    /// they name every column of a model, so a request naming a record's
    /// fields comes near them by words and meaning alike, while it is
    /// mostly about the screen or the code that uses those fields; the
    /// answer when the request is about how the data is stored.
    Migration,
    /// A web API's code (an `api` folder, `*ApiController`): beside an
    /// admin panel or pages that do the same thing for people, the API's
    /// controller for a record shares every word of a request about the
    /// screen; the answer when the request is about the API.
    Api,
}

/// The role of a repo-relative path, from its directories and name.
#[must_use]
pub fn role(path: &str) -> FileRole {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let original_name = path.rsplit('/').next().unwrap_or(path);
    let dirs: Vec<&str> = lower.split('/').collect();
    let dirs = &dirs[..dirs.len().saturating_sub(1)];
    let has_dir = |names: &[&str]| dirs.iter().any(|d| names.contains(d));
    // `testing` only at the top (pytest keeps its tests in `testing/`):
    // inside a package it is the library's test support (a test client,
    // fakes), the code a request about testing with the library is
    // answered by (`src/quart/testing/client.py`,
    // `Illuminate/Foundation/Testing`).
    if has_dir(&["tests", "test", "__tests__", "spec", "specs", "e2e", "cypress"])
        || dirs.first() == Some(&"testing")
        || name.starts_with("test_")
        || name.ends_with("_test.py")
        || name.ends_with("_test.go")
        || original_name.ends_with("Test.php")
        || name.contains(".spec.")
        || name.contains(".test.")
        || name == "conftest.py"
    {
        return FileRole::Test;
    }
    if has_dir(&["migrations"]) || lower.starts_with("database/settings/") {
        return FileRole::Migration;
    }
    if has_dir(&["lang", "locale", "locales", "i18n", "translations"]) || name.ends_with(".po") || name.ends_with(".pot") {
        return FileRole::Translation;
    }
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    // Diagrams as text (PlantUML, Mermaid, Graphviz) are documentation:
    // a class diagram names every model and relation, near any request.
    if has_dir(&["docs", "doc", "documentation", "diagrams"])
        || matches!(ext, "md" | "rst" | "txt" | "adoc" | "puml" | "plantuml" | "iuml" | "mmd" | "mermaid" | "dot" | "gv")
        || name.starts_with("changelog")
        || name.starts_with("license")
    {
        return FileRole::Docs;
    }
    // Laravel's model factories and seeders are test and demo data too.
    if has_dir(&["fixtures", "fixture", "examples", "example", "stubs", "samples", "demo", "factories", "seeders", "seeds"]) {
        return FileRole::Example;
    }
    if name.ends_with(".d.ts") || ext == "pyi" {
        return FileRole::Declarations;
    }
    if matches!(ext, "css" | "scss" | "sass" | "less" | "styl" | "pcss" | "postcss") {
        return FileRole::Stylesheet;
    }
    if name.ends_with(".blade.php")
        || matches!(ext, "html" | "htm" | "twig" | "jinja" | "jinja2" | "j2" | "mustache" | "hbs" | "handlebars" | "erb" | "ejs" | "njk")
    {
        return FileRole::Template;
    }
    if has_dir(&["api", "apis"]) || original_name.contains("ApiController") {
        return FileRole::Api;
    }
    FileRole::Source
}

/// Words that make a query about tests, docs, translations or examples (in
/// English and Japanese), lower-cased.
const ASKS_FOR: &[(FileRole, &[&str])] = &[
    (FileRole::Test, &["test", "tests", "testing", "spec", "specs", "unittest", "pytest", "phpunit", "テスト", "試験"]),
    (
        FileRole::Docs,
        &["doc", "docs", "documentation", "documented", "readme", "changelog", "guide", "ドキュメント", "説明書", "文書"],
    ),
    (
        FileRole::Translation,
        &["translation", "translations", "translate", "locale", "localization", "i18n", "language", "翻訳", "多言語", "言語ファイル", "文言"],
    ),
    (
        FileRole::Example,
        &["example", "examples", "fixture", "fixtures", "sample", "stub", "factory", "factories", "seed", "seeder", "seeders", "サンプル", "ダミーデータ", "テストデータ", "初期データ"],
    ),
    (
        FileRole::Migration,
        &[
            "table", "tables", "column", "columns", "row", "rows", "migration", "migrations",
            "migrate", "migrated", "migrating", "schema", "database", "db", "sql", "stored", "persisted", "index",
            "indexes", "foreign", "nullable", "upgrade", "upgraded", "upgrading", "テーブル", "カラム", "レコード",
            "マイグレーション", "スキーマ", "データベース", "保存", "移行", "アップグレード",
        ],
    ),
    (
        FileRole::Api,
        &[
            "api", "apis", "endpoint", "endpoints", "rest", "restful", "json", "token", "tokens", "bearer", "graphql",
            "webhook", "webhooks", "エンドポイント", "トークン",
        ],
    ),
    (FileRole::Declarations, &["type", "types", "typing", "typings", "interface", "declaration", "declarations", "型"]),
    (
        FileRole::Stylesheet,
        &[
            "css", "scss", "sass", "less", "style", "styles", "styling", "stylesheet", "color", "colors", "colour", "colours",
            "font", "fonts", "margin", "margins", "padding", "spacing", "border", "borders", "shadow", "theme",
            "themes", "dark", "contrast", "align", "aligned", "alignment", "centered", "centre", "center", "overflow",
            "truncated", "width", "height", "responsive", "animation", "hover", "bold", "italic",
            "appearance", "色", "カラー", "見た目", "デザイン", "スタイル", "フォント", "文字サイズ",
            "余白", "背景", "影", "枠", "ダーク", "テーマ", "中央", "揃え", "幅", "高さ", "はみ出", "崩れ", "折り返",
            "アニメーション", "太字", "レイアウト",
        ],
    ),
    (
        FileRole::Template,
        &[
            "page", "pages", "screen", "view", "views", "template", "templates", "html", "markup", "blade", "jinja",
            "layout", "show", "shows", "shown", "showing", "display", "displays", "displayed", "render", "renders",
            "rendered", "visible", "hidden", "hide", "appear", "appears", "button", "buttons", "link", "links",
            "menu", "menus", "header", "footer", "sidebar", "navigation", "nav", "title", "heading", "label", "labels",
            "text", "wording", "icon", "icons", "tab", "tabs", "modal", "dialog", "dropdown", "email", "mail",
            "画面", "表示", "ページ", "ボタン", "リンク", "メニュー", "ヘッダー", "フッター", "サイドバー", "ナビ",
            "テンプレート", "ビュー", "見出し", "タイトル", "ラベル", "アイコン", "文言", "タブ", "ダイアログ",
            "モーダル", "メール", "出て", "見え", "レイアウト",
        ],
    ),
];

/// What a translation file keeps of its score for a request in a language
/// written in CJK characters, which its text matches by language alone.
pub const TRANSLATION_PRIOR_CJK: f64 = 0.25;

/// What a translation file keeps of what [`prior`] gives it when it is in
/// another language than the request: an English request about sharing
/// permissions found Serbian, Danish and Indonesian copies of a wiki's
/// `entities.php` (the same keys, one file per language) above the code,
/// and only the request's own language is the text a developer reads.
pub const OTHER_LANGUAGE_SHARE: f64 = 0.5;

/// What a style sheet keeps of its score for a request that is not about
/// how something looks: its short rules come near any request by meaning
/// (a Japanese request about search ranking found `.dropdown-search` and
/// `.text-center` first).
pub const STYLESHEET_PRIOR: f64 = 0.5;

/// What a page template keeps of its score for a request that is not about
/// what a page shows (a request about page slugs found three page
/// templates first: they print the slug, the generator makes it).
pub const TEMPLATE_PRIOR: f64 = 0.7;

/// What a migration keeps of its score for a request that is not about
/// how data is stored (a request to make a list's columns sortable found
/// the migration that creates the table first).
pub const MIGRATION_PRIOR: f64 = 0.6;

/// What a web API's file keeps of its score for a request that does not
/// speak of the API (a request about bulk deleting records in the admin
/// panel found the API controller of those records first).
pub const API_PRIOR: f64 = 0.7;

/// What a test keeps of its score for a request that mentions tests. Less
/// than the whole: "in tests", "the test client", "our test suite" are
/// mostly where a bug was seen, not what is to be changed; every such
/// request of `bench/retrieval` is answered by source (a framework's test
/// client, the code under test), while the tests, which repeat the
/// request's words, came first for three of them (0.8 still left a framework's test client
/// out of the first ten under six test files; 0.6 moved three requests up and none down,
/// bench/README.md). Above [`prior`]'s 0.5 for a test nobody asked about.
pub const TEST_PRIOR_ASKED: f64 = 0.6;

/// What a test keeps of its score when the request asks for tests as what
/// is to be written or changed ("add a test for ...", 「テストを追加」,
/// [`TEST_TARGET_PHRASES`]): the tests near the top, still below source
/// that answers as well.
pub const TEST_PRIOR_TARGET: f64 = 0.8;

/// Words that make tests what a request is about, not where it saw a bug.
const TEST_TARGET_PHRASES: &[&str] = &[
    "test for", "tests for", "add a test", "add tests", "write a test", "write tests", "new test", "missing test",
    "test case", "test cases", "test coverage", "テストを追加", "テストを書", "テストケース", "テストコード",
];

/// Does the request say `phrase` (ASCII phrases as whole words in order)?
fn says(query_lower: &str, phrase: &str) -> bool {
    if !phrase.is_ascii() {
        return query_lower.contains(phrase);
    }
    let words: Vec<&str> = query_lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let wanted: Vec<&str> = phrase.split(' ').collect();
    words.windows(wanted.len()).any(|w| w == wanted.as_slice())
}

/// Does the query ask about files of this role ([`ASKS_FOR`])?
fn asks_for(role: FileRole, query_lower: &str) -> bool {
    ASKS_FOR.iter().filter(|(r, _)| *r == role).flat_map(|(_, words)| words.iter()).any(|w| {
        if w.is_ascii() {
            query_lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|q| q == *w)
        } else {
            query_lower.contains(w)
        }
    })
}

/// How much a file of this role keeps of its fused score for this query:
/// 1 for source, and for any role the query asks about (tests, asked
/// about, [`TEST_PRIOR_ASKED`], or [`TEST_PRIOR_TARGET`] when they are what
/// is to be written).
#[must_use]
pub fn prior(role: FileRole, query_lower: &str) -> f64 {
    if role == FileRole::Source {
        return 1.0;
    }
    if asks_for(role, query_lower) {
        return match role {
            FileRole::Test if TEST_TARGET_PHRASES.iter().any(|p| says(query_lower, p)) => TEST_PRIOR_TARGET,
            FileRole::Test => TEST_PRIOR_ASKED,
            _ => 1.0,
        };
    }
    match role {
        FileRole::Source => 1.0,
        // A request in Japanese (or Chinese, Korean) resembles every
        // translation file of its language twice over: in meaning, and in
        // the character pairs the keyword arm matches.
        FileRole::Translation if code_intel_store::tokenize::has_cjk(query_lower) => TRANSLATION_PRIOR_CJK,
        FileRole::Test | FileRole::Translation => 0.5,
        FileRole::Docs => 0.6,
        FileRole::Example | FileRole::Declarations => 0.7,
        FileRole::Migration => MIGRATION_PRIOR,
        FileRole::Api => API_PRIOR,
        FileRole::Stylesheet => STYLESHEET_PRIOR,
        FileRole::Template => TEMPLATE_PRIOR,
    }
}

/// What a file keeps of its fused score for this query: [`prior`] of its
/// [`role`], and for a translation file in another language than the
/// request [`OTHER_LANGUAGE_SHARE`] of that, unless the request is about
/// translations (it may name the language it is about). A request written
/// with kana is taken as Japanese, one written in ASCII letters as English
/// (an unaccented request in another language is taken so too); for any
/// other, no translation weighs less.
#[must_use]
pub fn file_prior(path: &str, query_lower: &str) -> f64 {
    let role = role(path);
    let base = prior(role, query_lower);
    if role != FileRole::Translation || asks_for(FileRole::Translation, query_lower) {
        return base;
    }
    let request = if crate::semantic::is_english(query_lower) {
        "en"
    } else if query_lower.chars().any(|c| matches!(c, '\u{3041}'..='\u{30ff}')) {
        "ja"
    } else {
        return base;
    };
    match translation_language(path) {
        Some(language) if language != request => base * OTHER_LANGUAGE_SHARE,
        _ => base,
    }
}

/// The two-letter language codes (ISO 639-1) a locale starts with.
const LANGUAGES: &[&str] = &[
    "aa", "ab", "ae", "af", "ak", "am", "an", "ar", "as", "av", "ay", "az", "ba", "be", "bg", "bh", "bi", "bm", "bn",
    "bo", "br", "bs", "ca", "ce", "ch", "co", "cr", "cs", "cu", "cv", "cy", "da", "de", "dv", "dz", "ee", "el", "en",
    "eo", "es", "et", "eu", "fa", "ff", "fi", "fj", "fo", "fr", "fy", "ga", "gd", "gl", "gn", "gu", "gv", "ha", "he",
    "hi", "ho", "hr", "ht", "hu", "hy", "hz", "ia", "id", "ie", "ig", "ii", "ik", "io", "is", "it", "iu", "ja", "jv",
    "ka", "kg", "ki", "kj", "kk", "kl", "km", "kn", "ko", "kr", "ks", "ku", "kv", "kw", "ky", "la", "lb", "lg", "li",
    "ln", "lo", "lt", "lu", "lv", "mg", "mh", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my", "na", "nb", "nd", "ne",
    "ng", "nl", "nn", "no", "nr", "nv", "ny", "oc", "oj", "om", "or", "os", "pa", "pi", "pl", "ps", "pt", "qu", "rm",
    "rn", "ro", "ru", "rw", "sa", "sc", "sd", "se", "sg", "si", "sk", "sl", "sm", "sn", "so", "sq", "sr", "ss", "st",
    "su", "sv", "sw", "ta", "te", "tg", "th", "ti", "tk", "tl", "tn", "to", "tr", "ts", "tt", "tw", "ty", "ug", "uk",
    "ur", "uz", "ve", "vi", "vo", "wa", "wo", "xh", "yi", "yo", "za", "zh", "zu",
];

/// The language a translation file holds (an ISO 639-1 code), from the
/// folder or file named by its locale: `lang/sr/entities.php` `sr`,
/// `resources/lang/pt_BR/auth.php` `pt`, `locales/ja.json` `ja`,
/// `locale/de/LC_MESSAGES/django.po` `de`, `po/fr.po` `fr`; `jp`, a common
/// name for Japanese, is `ja`. `None` when no part of the path after a
/// translations folder reads as a locale.
#[must_use]
pub fn translation_language(path: &str) -> Option<&'static str> {
    let parts: Vec<&str> = path.split('/').collect();
    let folders = ["lang", "locale", "locales", "i18n", "translations", "po"];
    let start = parts.iter().position(|p| folders.contains(&p.to_ascii_lowercase().as_str()))?;
    parts[start + 1..].iter().find_map(|part| {
        let stem = part.split('.').next().unwrap_or(part);
        let (language, region) = stem.split_once(['_', '-']).map_or((stem, None), |(l, r)| (l, Some(r)));
        let language = language.to_ascii_lowercase();
        let language = if language == "jp" { "ja" } else { language.as_str() };
        let is_region = region.is_none_or(|r| (2..=4).contains(&r.len()) && r.chars().all(|c| c.is_ascii_alphanumeric()));
        LANGUAGES.iter().copied().find(|l| *l == language).filter(|_| is_region)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_counts_the_next_chunks_a_little() {
        assert!((file_evidence(&mut [0.5, 0.9, 0.1]) - (0.9 + 0.3 * 0.5 + 0.15 * 0.1)).abs() < 1e-12);
        assert_eq!(file_evidence(&mut []), 0.0);
    }

    #[test]
    fn files_rank_on_all_their_chunks() {
        let ranked = rank_files([("a.py", 0.8), ("b.py", 0.7), ("b.py", 0.6), ("c.py", 0.1)]);
        assert_eq!(ranked, ["b.py", "a.py", "c.py"]);
    }

    #[test]
    fn fusion_prefers_agreement() {
        let lexical: &[&str] = &["a", "b", "c"];
        let vector: &[&str] = &["b", "d", "a"];
        let fused = fuse_ranks(&[(lexical, 1.0), (vector, 1.0)]);
        let mut order: Vec<(&String, &f64)> = fused.iter().collect();
        order.sort_by(|x, y| y.1.total_cmp(x.1));
        assert_eq!(order[0].0, "b");
        assert_eq!(order[1].0, "a");
    }

    #[test]
    fn translations_in_another_language_than_the_request_weigh_less() {
        for (path, language) in [
            ("lang/sr/entities.php", Some("sr")),
            ("resources/lang/pt_BR/auth.php", Some("pt")),
            ("locales/ja.json", Some("ja")),
            ("src/i18n/zh-Hans.json", Some("zh")),
            ("locale/de/LC_MESSAGES/django.po", Some("de")),
            ("lang/vendor/filament/en/actions.php", Some("en")),
            ("lang/en.json", Some("en")),
            ("app/Lang/Helper.php", None),
            ("translations/messages.php", None),
            ("translations/app_de.ts", None),
            ("src/lang/go/parser.go", None),
            ("lang/vendor/ui/en/x.php", Some("en")),
            ("locales/jp.json", Some("ja")),
        ] {
            assert_eq!(translation_language(path), language, "{path}");
        }
        let english = "skip books that already have their own permissions";
        assert_eq!(file_prior("lang/en/entities.php", english), prior(FileRole::Translation, english));
        assert_eq!(file_prior("lang/sr/entities.php", english), prior(FileRole::Translation, english) * OTHER_LANGUAGE_SHARE);
        let japanese = "ログイン画面の色を変えたい";
        assert_eq!(file_prior("lang/ja/auth.php", japanese), TRANSLATION_PRIOR_CJK);
        assert_eq!(file_prior("lang/en/auth.php", japanese), TRANSLATION_PRIOR_CJK * OTHER_LANGUAGE_SHARE);
        let wording = "the French translation of the login button is wrong";
        assert_eq!(file_prior("lang/en/auth.php", wording), 1.0);
        assert_eq!(file_prior("lang/fr/auth.php", wording), 1.0, "a request about translations may name any language");
        assert_eq!(file_prior("lang/fr/auth.php", "le bouton de connexion est cassé"), prior(FileRole::Translation, "x"), "no guess");
        assert_eq!(file_prior("app/Models/User.php", english), 1.0);
    }

    #[test]
    fn roles() {
        for (path, expected) in [
            ("app/Models/User.php", FileRole::Source),
            ("tests/Feature/UserTest.php", FileRole::Test),
            ("src/components/Player.spec.ts", FileRole::Test),
            ("starlette/testclient.py", FileRole::Source),
            ("src/quart/testing/client.py", FileRole::Source),
            ("src/Illuminate/Foundation/Testing/RefreshDatabase.php", FileRole::Source),
            ("testing/python/collect.py", FileRole::Test),
            ("tests/test_routing.py", FileRole::Test),
            ("docs/routing.md", FileRole::Docs),
            ("README.md", FileRole::Docs),
            ("diagrams/class-uml/storage_class_diagram.puml", FileRole::Docs),
            ("docs-src/flow.mmd", FileRole::Docs),
            ("lang/ja/server.php", FileRole::Translation),
            ("resources/lang/en/auth.php", FileRole::Translation),
            ("examples/app.py", FileRole::Example),
            ("database/Factories/ServerFactory.php", FileRole::Example),
            ("database/seeders/DatabaseSeeder.php", FileRole::Example),
            ("resources/assets/js/types.d.ts", FileRole::Declarations),
            ("src/app.pyi", FileRole::Declarations),
            ("resources/views/users/index.blade.php", FileRole::Template),
            ("templates/base.html", FileRole::Template),
            ("app/Models/Latest.php", FileRole::Source),
            ("resources/sass/_components.scss", FileRole::Stylesheet),
            ("public/css/app.css", FileRole::Stylesheet),
            ("tailwind.config.js", FileRole::Source),
            ("database/migrations/2024_01_01_000000_create_orders_table.php", FileRole::Migration),
            ("database/settings/2022_06_21_161821_add_inbox_workflow_setting.php", FileRole::Migration),
            ("shop/migrations/0001_initial.py", FileRole::Migration),
            ("app/Console/Commands/MigrateSettings.php", FileRole::Source),
            ("app/Settings/GeneralSettings.php", FileRole::Source),
            ("app/Http/Controllers/Api/Application/Eggs/EggController.php", FileRole::Api),
            ("app/Entities/Controllers/PageApiController.php", FileRole::Api),
            ("app/Http/Controllers/ApiaryController.php", FileRole::Source),
            ("tests/Api/PagesApiTest.php", FileRole::Test),
        ] {
            assert_eq!(role(path), expected, "{path}");
        }
    }

    #[test]
    fn priors_flip_when_asked() {
        assert_eq!(prior(FileRole::Test, "add a test for the login form"), TEST_PRIOR_TARGET);
        assert_eq!(prior(FileRole::Test, "ログインフォームのテストを追加したい"), TEST_PRIOR_TARGET);
        assert_eq!(prior(FileRole::Test, "the test client hangs on a redirect loop"), TEST_PRIOR_ASKED);
        assert_eq!(prior(FileRole::Test, "the latest for tests is wrong"), TEST_PRIOR_ASKED, "whole words only");
        assert!(prior(FileRole::Test, "where is the login form validated") < TEST_PRIOR_ASKED);
        assert_eq!(prior(FileRole::Docs, "the docs for middleware are wrong"), 1.0);
        assert_eq!(prior(FileRole::Translation, "ログイン画面の文言を変えたい"), 1.0);
        assert!(prior(FileRole::Translation, "ログイン画面の色を変えたい") < 1.0);
        assert!(prior(FileRole::Test, "latest version") < 1.0, "whole words only");
        assert_eq!(prior(FileRole::Source, "anything"), 1.0);
        assert!(prior(FileRole::Declarations, "skip to the next song") < 1.0);
        assert_eq!(prior(FileRole::Declarations, "the Song type lacks a field"), 1.0);
        assert_eq!(prior(FileRole::Stylesheet, "検索結果の順位で見出しの単語は重く扱われますか"), STYLESHEET_PRIOR);
        assert_eq!(prior(FileRole::Stylesheet, "make the sidebar links a darker colour"), 1.0);
        assert_eq!(prior(FileRole::Stylesheet, "ボタンの色を緑に変えたい"), 1.0);
        assert_eq!(prior(FileRole::Template, "page slugs are not unique after a rename"), 1.0);
        assert_eq!(prior(FileRole::Template, "slugs are not unique after a rename"), TEMPLATE_PRIOR);
        assert_eq!(prior(FileRole::Template, "ヘッダーにリンクを追加したい"), 1.0);
        assert_eq!(prior(FileRole::Template, "LDAPのグループ同期が動かない"), TEMPLATE_PRIOR);
        assert_eq!(prior(FileRole::Migration, "make the name column of the hosts list searchable"), 1.0);
        assert_eq!(prior(FileRole::Migration, "let admins change the leaderboard settings"), MIGRATION_PRIOR);
        assert_eq!(prior(FileRole::Migration, "通知の設定はどのテーブルに保存されますか"), 1.0);
        assert_eq!(prior(FileRole::Migration, "管理画面のユーザー一覧で役割ごとに絞り込みたい"), MIGRATION_PRIOR);
        assert_eq!(prior(FileRole::Migration, "設定はdbのどこにありますか"), 1.0, "an English word inside Japanese text");
        assert_eq!(prior(FileRole::Api, "bulk deleting eggs in the admin panel"), API_PRIOR);
        assert_eq!(prior(FileRole::Api, "the application api users listing cannot be sorted"), 1.0);
        assert_eq!(prior(FileRole::Api, "apiキーの接続元ipの制限はどこでチェックしていますか"), 1.0);
        assert_eq!(prior(FileRole::Api, "サブユーザーを招待するとき"), API_PRIOR);
    }

    #[test]
    fn translations_weigh_less_against_a_request_in_their_script() {
        // "The add-port button does not appear on the network page": every
        // Japanese translation file resembles it in language alone.
        let japanese = "ネットワーク画面にポート追加のボタンが出てこない";
        assert_eq!(prior(FileRole::Translation, japanese), TRANSLATION_PRIOR_CJK);
        assert!(TRANSLATION_PRIOR_CJK < prior(FileRole::Translation, "the add port button is missing"));
        // Unless the request is about the wording itself.
        assert_eq!(prior(FileRole::Translation, "ボタンの文言を変えたい"), 1.0);
        assert_eq!(prior(FileRole::Source, japanese), 1.0);
    }
}
