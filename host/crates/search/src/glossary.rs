//! Japanese software vocabulary in the English words code is written in, for
//! the keyword arm of a Japanese request.
//!
//! Japanese has no spaces and code says `deleteBackup`, not 削除: a
//! Japanese request finds nothing by keyword. The vector arm (a multilingual
//! model) bridges the languages by meaning; this table gives the keyword arm
//! the same reach for the everyday words of software work — actions (削除
//! delete, 一覧 list, 並び替え sort), things (ユーザー user, 権限 permission,
//! 添付ファイル attachment) and UI (画面 page, ボタン button) — so a file
//! that both arms find ranks first. The words found are added to the keyword
//! query; the vector arm embeds the request as written and, in hybrid mode,
//! those words as an English query of their own
//! ([`crate::hybrid::translated_query`]).
//!
//! ```
//! use code_intel_search::glossary::english_terms;
//! assert_eq!(english_terms("ユーザーを削除するとエラーになる"), ["user", "users", "delete", "destroy", "error", "exception"]);
//! assert!(english_terms("delete the user").is_empty());
//! ```

/// (Japanese, English words). Longer Japanese keys are matched first, and
/// the text they cover is not matched again by a shorter key.
const TERMS: &[(&str, &[&str])] = &[
    // Actions.
    ("削除", &["delete", "destroy"]),
    ("消す", &["delete", "remove"]),
    ("追加", &["add", "create"]),
    ("作成", &["create", "store"]),
    ("新規", &["create", "new"]),
    ("登録", &["register", "store", "create"]),
    ("編集", &["edit", "update"]),
    ("更新", &["update"]),
    ("変更", &["change", "update"]),
    ("保存", &["save", "store"]),
    ("一覧", &["list", "index"]),
    ("詳細", &["show", "detail", "view"]),
    ("表示", &["show", "display", "view"]),
    ("非表示", &["hide", "hidden"]),
    ("検索", &["search", "query"]),
    ("絞り込", &["filter"]),
    ("フィルター", &["filter"]),
    ("並び替え", &["sort", "order"]),
    ("並べ替え", &["sort", "order"]),
    ("ソート", &["sort"]),
    ("並び順", &["sort", "order"]),
    ("移動", &["move"]),
    ("複製", &["duplicate", "clone", "copy"]),
    ("コピー", &["copy"]),
    ("送信", &["send", "submit"]),
    ("受信", &["receive"]),
    ("取得", &["get", "fetch"]),
    ("読み込", &["load", "read"]),
    ("書き込", &["write"]),
    ("アップロード", &["upload"]),
    ("ダウンロード", &["download"]),
    ("インポート", &["import"]),
    ("エクスポート", &["export"]),
    ("出力", &["export", "output"]),
    ("変換", &["convert", "transform"]),
    ("検証", &["validate", "validation"]),
    ("バリデーション", &["validation", "validate", "rules"]),
    ("認証", &["auth", "authenticate", "login"]),
    ("認可", &["authorize", "policy"]),
    ("ログイン", &["login", "auth"]),
    ("ログアウト", &["logout"]),
    ("再生", &["play"]),
    ("停止", &["stop", "pause"]),
    ("一時停止", &["pause"]),
    ("予約", &["schedule"]),
    ("通知", &["notification", "notify"]),
    ("招待", &["invite", "invitation"]),
    ("復元", &["restore"]),
    ("初期化", &["init", "initialize", "reset"]),
    ("リセット", &["reset"]),
    ("再試行", &["retry"]),
    ("リトライ", &["retry"]),
    ("キャンセル", &["cancel"]),
    ("無効", &["disable", "disabled", "invalid"]),
    ("有効", &["enable", "enabled"]),
    ("制限", &["limit", "throttle"]),
    ("上限", &["limit", "max"]),
    ("計算", &["calculate", "compute"]),
    ("集計", &["aggregate", "count", "sum"]),
    ("圧縮", &["compress", "gzip"]),
    ("解凍", &["decompress", "extract"]),
    ("暗号化", &["encrypt"]),
    ("ハッシュ", &["hash"]),
    ("翻訳", &["translation", "translate", "lang"]),
    ("リダイレクト", &["redirect"]),
    ("キャッシュ", &["cache"]),
    ("ログ", &["log", "logs"]),
    // Things.
    ("ユーザー", &["user", "users"]),
    ("ユーザ", &["user", "users"]),
    ("管理者", &["admin"]),
    ("管理画面", &["admin", "panel"]),
    ("権限", &["permission", "permissions", "role"]),
    ("ロール", &["role", "roles"]),
    ("パスワード", &["password"]),
    ("メールアドレス", &["email"]),
    ("メール", &["mail", "email"]),
    ("設定", &["settings", "config"]),
    ("環境変数", &["env", "config"]),
    ("データベース", &["database", "db"]),
    ("テーブル", &["table"]),
    ("カラム", &["column"]),
    ("列", &["column"]),
    ("配列", &["array"]),
    ("行列", &["matrix"]),
    ("マイグレーション", &["migration"]),
    ("モデル", &["model"]),
    ("コントローラー", &["controller"]),
    ("ミドルウェア", &["middleware"]),
    ("ルーティング", &["route", "routing", "router"]),
    ("ルート", &["route", "routes"]),
    ("リクエスト", &["request"]),
    ("レスポンス", &["response"]),
    ("ヘッダー", &["header", "headers"]),
    ("ヘッダ", &["header", "headers"]),
    ("クッキー", &["cookie", "cookies"]),
    ("セッション", &["session"]),
    ("トークン", &["token"]),
    ("静的ファイル", &["static", "files"]),
    ("添付ファイル", &["attachment", "attachments"]),
    ("ファイル", &["file", "files"]),
    ("画像", &["image", "images"]),
    ("サムネイル", &["thumbnail"]),
    ("アイコン", &["icon"]),
    ("フォルダ", &["folder", "directory"]),
    ("ディレクトリ", &["directory"]),
    ("パス", &["path"]),
    ("日付", &["date"]),
    ("日時", &["datetime", "date"]),
    ("時刻", &["time"]),
    ("時間", &["time", "duration"]),
    ("タイムゾーン", &["timezone"]),
    ("言語", &["language", "locale"]),
    ("エラー", &["error", "exception"]),
    ("例外", &["exception"]),
    ("警告", &["warning"]),
    ("メッセージ", &["message"]),
    ("コメント", &["comment", "comments"]),
    ("タグ", &["tag", "tags"]),
    ("カテゴリ", &["category", "categories"]),
    ("商品", &["product", "products"]),
    ("注文", &["order", "orders"]),
    ("在庫", &["stock", "inventory"]),
    ("価格", &["price"]),
    ("金額", &["amount", "total"]),
    ("合計", &["total", "sum"]),
    ("請求書", &["invoice"]),
    ("支払", &["payment"]),
    ("決済", &["payment", "checkout"]),
    ("送料", &["shipping"]),
    ("割引", &["discount", "coupon"]),
    ("クーポン", &["coupon"]),
    ("カート", &["cart"]),
    ("レビュー", &["review", "reviews"]),
    ("プロフィール", &["profile"]),
    ("アバター", &["avatar"]),
    ("アカウント", &["account"]),
    ("チーム", &["team"]),
    ("グループ", &["group"]),
    ("サーバー", &["server", "servers"]),
    ("サーバ", &["server", "servers"]),
    ("ノード", &["node", "nodes"]),
    ("バックアップ", &["backup", "backups"]),
    ("スケジュール", &["schedule", "schedules"]),
    ("タスク", &["task", "tasks"]),
    ("ジョブ", &["job", "jobs"]),
    ("キュー", &["queue"]),
    ("コマンド", &["command"]),
    ("プラグイン", &["plugin"]),
    ("テンプレート", &["template", "view"]),
    ("フォーム", &["form"]),
    ("入力", &["input", "field"]),
    ("項目", &["field", "item"]),
    ("ボタン", &["button"]),
    ("リンク", &["link"]),
    ("メニュー", &["menu"]),
    ("サイドバー", &["sidebar"]),
    ("ナビゲーション", &["navigation"]),
    ("モーダル", &["modal"]),
    ("ダイアログ", &["dialog", "modal"]),
    ("ダッシュボード", &["dashboard"]),
    ("ウィジェット", &["widget"]),
    ("画面", &["page", "screen", "view"]),
    ("ページ", &["page", "pages"]),
    ("ページネーション", &["pagination", "paginate"]),
    ("タブ", &["tab", "tabs"]),
    ("一覧表", &["table"]),
    ("ショートカット", &["shortcut", "hotkey"]),
    ("キーボード", &["keyboard", "key"]),
    ("ドラッグ", &["drag"]),
    ("ドロップ", &["drop"]),
    ("通信", &["http", "request"]),
    ("接続", &["connection", "connect"]),
    ("プレイリスト", &["playlist", "playlists"]),
    ("アルバム", &["album", "albums"]),
    ("アーティスト", &["artist", "artists"]),
    ("曲", &["song", "songs"]),
    ("音量", &["volume"]),
    ("歌詞", &["lyrics"]),
    ("シャッフル", &["shuffle"]),
    ("お気に入り", &["favorite", "favorites"]),
    ("ブック", &["book", "books"]),
    ("チャプター", &["chapter", "chapters"]),
    ("本棚", &["shelf", "bookshelf"]),
    ("シェルフ", &["shelf", "bookshelf"]),
    ("リビジョン", &["revision", "revisions"]),
    ("履歴", &["history", "revision", "activity"]),
    ("アクティビティ", &["activity"]),
    ("ウェブフック", &["webhook"]),
    ("エディター", &["editor"]),
    ("エディタ", &["editor"]),
    ("ウェブソケット", &["websocket"]),
    ("ストリーミング", &["streaming", "stream"]),
    ("テスト", &["test"]),
    ("非同期", &["async"]),
    ("スレッド", &["thread"]),
    // Everyday words of code, settings and UI.
    ("処理", &["handle", "process"]),
    ("実行", &["run", "execute"]),
    ("呼び出", &["call", "invoke"]),
    ("受け取", &["receive", "handle"]),
    ("起動", &["start", "boot"]),
    ("開始", &["start", "begin"]),
    ("終了", &["end", "finish", "close"]),
    ("完了", &["complete", "done", "finish"]),
    ("成功", &["success"]),
    ("失敗", &["fail", "failed", "failure"]),
    ("確認", &["confirm", "verify", "check"]),
    ("承認", &["approve", "approval"]),
    ("拒否", &["reject", "deny"]),
    ("公開", &["public", "publish"]),
    ("非公開", &["private"]),
    ("下書き", &["draft"]),
    ("共有", &["share", "shared"]),
    ("同期", &["sync"]),
    ("自動", &["auto", "automatic"]),
    ("重複", &["duplicate", "unique"]),
    ("必須", &["required"]),
    ("任意", &["optional", "nullable"]),
    ("デフォルト", &["default"]),
    ("既定", &["default"]),
    ("初期値", &["default"]),
    ("最大", &["max", "maximum"]),
    ("最小", &["min", "minimum"]),
    ("下限", &["min", "minimum"]),
    ("秒", &["seconds", "second"]),
    ("期限", &["expire", "expires", "deadline"]),
    ("有効期限", &["expires", "expiration", "ttl"]),
    ("タイムアウト", &["timeout"]),
    ("件数", &["count", "total"]),
    ("範囲", &["range"]),
    ("昇順", &["asc", "ascending"]),
    ("降順", &["desc", "descending"]),
    ("先頭", &["first", "head", "leading"]),
    ("末尾", &["last", "trailing"]),
    ("空白", &["whitespace", "blank"]),
    ("改行", &["newline", "line"]),
    ("区切り", &["separator", "delimiter"]),
    ("正規表現", &["regex", "pattern"]),
    ("文字化け", &["encoding", "charset"]),
    ("文字コード", &["encoding", "charset"]),
    ("文字列", &["string", "str"]),
    ("文字数", &["length", "max"]),
    ("数値", &["number", "numeric"]),
    ("整数", &["int", "integer"]),
    ("名前", &["name"]),
    ("タイトル", &["title"]),
    ("説明", &["description"]),
    ("本文", &["body", "content"]),
    ("内容", &["content", "body"]),
    ("状態", &["state", "status"]),
    ("ステータス", &["status"]),
    ("種類", &["type", "kind"]),
    ("値", &["value"]),
    ("引数", &["argument", "param", "parameter"]),
    ("パラメータ", &["parameter", "param", "query"]),
    ("戻り値", &["return"]),
    ("関数", &["function"]),
    ("メソッド", &["method"]),
    ("クラス", &["class"]),
    ("変数", &["variable"]),
    ("定数", &["constant", "const"]),
    ("イベント", &["event", "listener"]),
    ("フック", &["hook"]),
    ("依存", &["dependency", "depends"]),
    ("バージョン", &["version"]),
    ("環境", &["env", "environment"]),
    ("本番", &["production"]),
    ("デバッグ", &["debug"]),
    ("統計", &["stats", "statistics"]),
    ("グラフ", &["chart", "graph"]),
    ("レポート", &["report"]),
    ("印刷", &["print"]),
    ("色", &["color", "colour"]),
    ("幅", &["width"]),
    ("高さ", &["height"]),
    ("サイズ", &["size"]),
    ("フォント", &["font"]),
    ("レイアウト", &["layout"]),
    ("背景", &["background"]),
    ("スタイル", &["style", "css"]),
    ("テーマ", &["theme"]),
    ("ダークモード", &["dark", "theme"]),
    ("スマホ", &["mobile"]),
    ("モバイル", &["mobile"]),
    ("リモコン", &["remote"]),
    ("プレイヤー", &["player"]),
    ("スライダー", &["slider"]),
    ("チェックボックス", &["checkbox"]),
    ("プルダウン", &["select", "dropdown"]),
    ("ドロップダウン", &["dropdown", "select"]),
    ("ツールチップ", &["tooltip"]),
    ("次へ", &["next"]),
    ("前へ", &["previous", "prev"]),
    ("遷移", &["navigate", "redirect"]),
    ("顧客", &["customer", "customers"]),
    ("記事", &["post", "posts", "article"]),
    ("投稿", &["post", "posts"]),
    ("ブログ", &["blog", "post"]),
    ("ブランド", &["brand", "brands"]),
    ("配送", &["shipping", "delivery"]),
    ("住所", &["address"]),
    ("電話番号", &["phone"]),
    ("国", &["country"]),
    // Input, layout and system words.
    ("フッター", &["footer"]),
    ("ポップアップ", &["popup", "modal"]),
    ("ラジオボタン", &["radio"]),
    ("テキストボックス", &["input", "text"]),
    ("入力欄", &["input", "field"]),
    ("クリック", &["click"]),
    ("ダブルクリック", &["dblclick", "click"]),
    ("スクロール", &["scroll"]),
    ("マウス", &["mouse"]),
    ("ホバー", &["hover"]),
    ("フォーカス", &["focus"]),
    ("キー", &["key", "keydown"]),
    ("キーワード", &["keyword", "query", "search"]),
    ("主キー", &["primary", "id"]),
    ("外部キー", &["foreign", "constrained"]),
    ("サポート", &["support", "supports"]),
    ("カタログ", &["catalog"]),
    ("リピート", &["repeat"]),
    ("ジャンル", &["genre", "genres"]),
    ("拡張子", &["extension"]),
    ("バックグラウンド", &["background"]),
    ("ジェネレーター", &["generator"]),
    ("イベントループ", &["loop", "event"]),
    ("コンソール", &["console"]),
    ("ターミナル", &["terminal", "console"]),
    ("ディスク", &["disk"]),
    ("使用量", &["usage"]),
    ("メモリ", &["memory"]),
    ("プロセス", &["process"]),
    ("ポート", &["port"]),
    ("ネットワーク", &["network"]),
    ("接続元", &["ip", "remote"]),
    ("定期実行", &["schedule", "cron"]),
    ("定期", &["schedule", "periodic"]),
    ("毎日", &["daily"]),
    ("毎週", &["weekly"]),
    ("毎分", &["minute", "everyMinute"]),
    ("著作権", &["copyright"]),
    ("未登録", &["unregistered", "exists"]),
    // Common words of change requests and bug reports.
    ("役割", &["role", "roles"]),
    ("許可", &["allow", "permission", "permit"]),
    ("除外", &["exclude", "ignore"]),
    ("最新", &["latest", "newest"]),
    ("最近", &["recent", "recently"]),
    ("人気", &["popular"]),
    ("条件", &["condition", "conditions"]),
    ("見出し", &["heading", "headings"]),
    ("段落", &["paragraph"]),
    ("順位", &["rank", "ranking", "score"]),
    ("単語", &["word", "words", "term", "terms"]),
    ("購読", &["subscribe", "subscription"]),
    ("既存", &["existing"]),
    ("一致", &["match", "matches"]),
    ("複数", &["multiple", "many"]),
    ("後始末", &["teardown", "cleanup"]),
    ("判定", &["check", "determine"]),
    ("順番", &["order", "position"]),
    ("順序", &["order", "sort"]),
    ("並列", &["parallel", "concurrent"]),
    ("切断", &["disconnect", "close"]),
    ("添付", &["attach", "attachment"]),
    ("署名", &["signature", "sign"]),
    ("期限切れ", &["expired", "expire"]),
    ("監査", &["audit"]),
    ("移行", &["migrate", "migration"]),
    ("課金", &["billing", "subscription"]),
    ("請求", &["invoice", "billing"]),
    ("支払い", &["payment", "pay"]),
    ("投票", &["vote", "votes"]),
    ("閲覧", &["view", "read"]),
    ("作者", &["author"]),
    ("著者", &["author"]),
    ("数量", &["quantity"]),
    ("再生リスト", &["playlist"]),
    ("繰り返し", &["repeat", "loop"]),
    ("一括", &["bulk", "batch"]),
    ("取り込", &["import"]),
    ("形式", &["format"]),
    ("上書き", &["overwrite", "replace"]),
    ("取り消", &["cancel", "undo", "revoke"]),
    ("受信箱", &["inbox"]),
    ("選択肢", &["options", "choices"]),
    ("選択", &["select", "selected"]),
    ("関連", &["related", "relation", "relationship"]),
    ("毎時", &["hourly"]),
    ("毎月", &["monthly"]),
    ("週1回", &["weekly"]),
    ("桁", &["digits", "length"]),
    ("直接", &["direct", "directly"]),
    ("前の", &["previous"]),
    // Records of business applications (sales, stock, staff), as their
    // tables and models name them.
    ("発送", &["ship", "shipping", "shipment"]),
    ("出荷", &["shipment", "ship", "outbound"]),
    ("入荷", &["receipt", "receipts", "arrival", "inbound"]),
    ("通貨", &["currency"]),
    ("税", &["tax"]),
    ("売上", &["sales", "revenue"]),
    ("収益", &["revenue", "income"]),
    ("利益", &["profit", "margin"]),
    ("原価", &["cost"]),
    ("単価", &["price", "unit_price"]),
    ("会員", &["member", "membership"]),
    ("取引", &["transaction", "transactions"]),
    ("倉庫", &["warehouse", "warehouses"]),
    ("従業員", &["employee", "employees", "staff"]),
    ("社員", &["employee", "staff"]),
    ("担当者", &["assignee", "assigned", "responsible"]),
    ("仕入先", &["supplier", "vendor"]),
    ("仕入", &["purchase", "supplier"]),
    ("販売", &["sale", "sales", "sell"]),
    ("返品", &["return", "returns", "refund"]),
    ("納品", &["delivery", "deliver"]),
    ("棚卸", &["stocktake", "stocktaking", "inventory"]),
    ("見積", &["quote", "quotation", "estimate"]),
    ("契約", &["contract", "subscription"]),
    ("部署", &["department"]),
    ("部門", &["department", "division"]),
    ("音声", &["audio", "voice"]),
    ("動画", &["video"]),
    ("苗字", &["surname", "last_name", "family_name"]),
    ("氏名", &["name", "full_name"]),
    ("郵便番号", &["postal", "zip", "postcode"]),
    ("都道府県", &["prefecture", "state"]),
];

/// Entries that are everyday words as much as software ones: "how tall is
/// Mount Fuji" (高さ) or "how many hours by train" (時間) is not about code.
/// They still widen the keyword query; they do not by themselves make a
/// Japanese request software talk ([`software_terms`]).
const EVERYDAY: &[&str] = &[
    "時間", "時刻", "日付", "日時", "秒", "高さ", "幅", "サイズ", "色", "背景", "国", "住所", "電話番号", "名前", "説明", "内容",
    "種類", "自動", "開始", "終了", "最大", "最小", "範囲", "値", "毎日", "毎週", "定期", "マウス", "キー", "著作権",
    "最新", "最近", "人気", "条件", "単語", "一致", "複数", "順番", "順序", "作者", "著者", "数量", "繰り返し", "段落",
    "見出し", "毎時", "毎月", "週1回", "直接", "前の",
    // Business records: words of any talk about a business, not only of
    // its software.
    "発送", "出荷", "入荷", "通貨", "税", "売上", "収益", "利益", "原価", "単価", "会員", "取引", "倉庫", "従業員", "社員",
    "担当者", "仕入先", "仕入", "販売", "返品", "納品", "棚卸", "見積", "契約", "部署", "部門", "音声", "動画", "苗字",
    "氏名", "郵便番号", "都道府県",
];

/// The English words of the software vocabulary in `query`, in order of
/// first appearance, each once. Empty for a query without Japanese.
#[must_use]
pub fn english_terms(query: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for word in matches(query).into_iter().flat_map(|(_, en)| en.iter().copied()) {
        if !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// How many vocabulary entries `query` mentions (distinct Japanese terms).
#[must_use]
pub fn matched_terms(query: &str) -> usize {
    distinct_entries(query, |_| true)
}

/// How many vocabulary entries `query` mentions that are not also everyday
/// words ([`EVERYDAY`]).
#[must_use]
pub fn software_terms(query: &str) -> usize {
    distinct_entries(query, |ja| !EVERYDAY.contains(&ja))
}

/// Distinct entries (by their English words) among the matches whose
/// Japanese key `keep` accepts.
fn distinct_entries(query: &str, keep: impl Fn(&str) -> bool) -> usize {
    let mut seen: Vec<&[&str]> = Vec::new();
    for (ja, en) in matches(query) {
        if keep(ja) && !seen.contains(&en) {
            seen.push(en);
        }
    }
    seen.len()
}

/// The English words of the vocabulary terms in `query` that stand next to
/// one another (nothing between them, or the particle の), one list of
/// alternatives per term, in order: 「注文一覧」 and 「注文の一覧」 give
/// `[[order, orders], [list, index]]`, what "the orders list" says. The
/// katakana words no vocabulary term covers are terms too when they read
/// as one of `names`, the words the repository names things with
/// ([`crate::loanwords::located_words`]): 「ボード一覧」 gives `[[board],
/// [list, index]]` in a repository that names boards, and so does
/// 「ボードテーブル」 `[[board], [table]]` though テーブル is a vocabulary
/// term. A katakana compound read as two words is two terms.
///
/// ```
/// use code_intel_search::glossary::term_runs_with;
/// let said = |runs: &[Vec<Vec<String>>], first: &str, second: &str| {
///     runs.iter().flat_map(|run| run.windows(2)).any(|w| w[0].iter().any(|x| x == first) && w[1].iter().any(|x| x == second))
/// };
/// assert!(said(&term_runs_with("管理画面の注文一覧で絞り込みたい", &[]), "order", "list"));
/// let names: Vec<String> = ["board", "boards"].map(String::from).to_vec();
/// assert!(said(&term_runs_with("管理画面のボード一覧にフィルターを追加したい", &names), "board", "list"));
/// assert!(said(&term_runs_with("ボードテーブルの列", &names), "board", "table"));
/// ```
#[must_use]
pub fn term_runs_with(query: &str, names: &[String]) -> Vec<Vec<Vec<String>>> {
    let own = |words: &[&str]| words.iter().map(|w| (*w).to_string()).collect::<Vec<String>>();
    let mut terms: Vec<(usize, usize, Vec<Vec<String>>)> =
        located(query).into_iter().map(|(at, ja, en)| (at, at + ja.len(), vec![own(en)])).collect();
    if !names.is_empty() && crate::loanwords::has_katakana(query) {
        // The text between vocabulary terms, read for katakana words.
        let mut covered: Vec<(usize, usize)> = terms.iter().map(|(a, b, _)| (*a, *b)).collect();
        covered.push((query.len(), query.len()));
        let mut from = 0;
        for (a, b) in covered {
            if from < a {
                for (start, end, words) in crate::loanwords::located_words(&query[from..a], names) {
                    terms.push((from + start, from + end, words.into_iter().map(|w| with_plural(&w)).collect()));
                }
            }
            from = from.max(b);
        }
    }
    terms.sort_by_key(|(at, _, _)| *at);
    let mut runs: Vec<Vec<Vec<String>>> = Vec::new();
    let mut end = usize::MAX;
    for (at, to, words) in terms {
        let joined = end != usize::MAX && query.get(end..at).is_some_and(|between| matches!(between, "" | "の"));
        match runs.last_mut() {
            Some(run) if joined => run.extend(words),
            _ => runs.push(words),
        }
        end = to;
    }
    runs
}

/// A word read from katakana and its plural, as a vocabulary term lists
/// its forms (`entry`, `entries`; `box`, `boxes`; `board`, `boards`): the
/// nearest name word is the singular one, a plugin's alias may say the
/// plural.
fn with_plural(word: &str) -> Vec<String> {
    let plural = match word.strip_suffix('y') {
        Some(stem) if stem.ends_with(|c: char| !"aeiou".contains(c)) => format!("{stem}ies"),
        _ if ["s", "x", "z", "ch", "sh"].iter().any(|e| word.ends_with(e)) => format!("{word}es"),
        _ => format!("{word}s"),
    };
    vec![word.to_string(), plural]
}

/// (Japanese key, English words) of every vocabulary match in `query`, in
/// order of position ([`located`]).
fn matches(query: &str) -> Vec<(&'static str, &'static [&'static str])> {
    located(query).into_iter().map(|(_, ja, en)| (ja, en)).collect()
}

/// (byte offset, Japanese key, English words) of every vocabulary match in
/// `query`, in order of position; longer keys are matched first and the
/// text they cover is not matched again by a shorter key.
fn located(query: &str) -> Vec<(usize, &'static str, &'static [&'static str])> {
    if query.is_ascii() {
        return Vec::new();
    }
    let mut keys: Vec<&(&str, &[&str])> = TERMS.iter().collect();
    keys.sort_by_key(|(ja, _)| std::cmp::Reverse(ja.len()));
    let mut covered = vec![false; query.len()];
    let mut found = Vec::new();
    for (ja, en) in keys {
        for (at, _) in query.match_indices(ja) {
            if covered[at..at + ja.len()].iter().any(|c| *c) {
                continue;
            }
            covered[at..at + ja.len()].iter_mut().for_each(|c| *c = true);
            found.push((at, *ja, *en));
        }
    }
    found.sort_by_key(|(at, _, _)| *at);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_key_wins() {
        assert_eq!(english_terms("静的ファイルの配信"), ["static", "files"]);
        assert_eq!(english_terms("添付ファイルをアップロード"), ["attachment", "attachments", "upload"]);
        assert_eq!(english_terms("一時停止ボタン"), ["pause", "button"]);
        // A short key inside a longer word is not that word: キー in キーワード, ポート in サポート.
        assert_eq!(english_terms("キーワード検索"), ["keyword", "query", "search"]);
        assert_eq!(english_terms("サポート対象"), ["support", "supports"]);
        assert_eq!(english_terms("Jキーを押す"), ["key", "keydown"]);
    }

    #[test]
    fn none_for_english_or_unknown_words() {
        assert!(english_terms("where are servers deleted").is_empty());
        assert!(english_terms("天気").is_empty());
        assert_eq!(matched_terms("新幹線で東京から大阪まで何時間かかりますか"), 1);
        assert_eq!(matched_terms("ユーザーを削除するとエラーになる"), 3);
    }

    #[test]
    fn everyday_words_are_not_software_talk() {
        assert_eq!(software_terms("新幹線で東京から大阪まで何時間かかりますか"), 0);
        assert_eq!(software_terms("富士山の高さは何メートルですか"), 0);
        assert_eq!(software_terms("トースト通知が消えるまでの時間"), 1);
        assert_eq!(software_terms("ユーザーを削除するとエラーになる"), 3);
        // Words of change requests that are everyday words too.
        assert_eq!(matched_terms("最近人気のレストランはどこですか"), 2);
        assert_eq!(software_terms("最近人気のレストランはどこですか"), 0);
        assert_eq!(english_terms("役割ごとに絞り込む"), ["role", "roles", "filter"]);
        // A business's words, which its software's records are named by.
        assert_eq!(software_terms("従業員の有給休暇は年に何日ですか"), 0);
        assert_eq!(english_terms("倉庫ごとの在庫数"), ["warehouse", "warehouses", "stock", "inventory"]);
        assert_eq!(english_terms("仕入先を登録"), ["supplier", "vendor", "register", "store", "create"]);
    }
}
