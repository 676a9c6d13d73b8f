//! Cross-file links on `fixtures/laravel-app`, indexed with the real plugin
//! components (build them first: `cargo xtask plugins`).
//!
//! Each assertion is a question a user asks of a Laravel app: which route a
//! form posts to and which controller method serves it, which class renders a
//! `<x-…>` component, where the product form's fields are stored, which
//! migrations define the table behind a model.

use std::path::Path;

use code_intel_core::config::{Config, database_path};
use code_intel_index::{LinksUpdate, SyncOptions, sync};
use code_intel_plugins::{HostOptions, PluginHost};
use code_intel_store::Store;
use code_intel_store::links::Link;

const LARAVEL_PLUGINS: &[&str] = &["php", "blade", "filament", "migrations", "composer", "tailwind"];

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../fixtures/laravel-app")
}

/// Indexes a copy of the fixture app; returns the temp dir and the store.
fn indexed() -> (tempfile::TempDir, Store) {
    let host = PluginHost::discover(None, HostOptions::default());
    let loaded: Vec<&str> = host.plugins().map(|p| p.name.as_str()).collect();
    for name in LARAVEL_PLUGINS {
        assert!(
            loaded.contains(name),
            "plugin `{name}` is not built (loaded: {loaded:?}); run `cargo xtask plugins` first"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), dir.path());
    let mut store = Store::open(&database_path(dir.path())).unwrap();
    let report = sync(dir.path(), &mut store, &host, &Config::default(), SyncOptions::default(), &|_| {}).unwrap();
    assert!(report.added > 50, "the fixture app has more files than {}", report.added);
    (dir, store)
}

fn has(links: &[Link], to: &str, kind: &str) -> bool {
    links.iter().any(|l| l.to_path == to && l.kind == kind)
}

fn describe(links: &[Link]) -> Vec<String> {
    links.iter().map(|l| format!("{} -{}-> {} ({})", l.from_path, l.kind, l.to_path, l.symbol)).collect()
}

#[test]
fn laravel_app_links_resolve_across_files() {
    let (_dir, store) = indexed();

    // PHP, Blade, composer.json and the Tailwind config are all chunked by a
    // plugin: nothing of theirs falls back to line chunks.
    let stats = store.indexed_files().unwrap();
    let mut fallbacks = Vec::new();
    for file in &stats {
        let chunks = store.file_chunks(&file.path).unwrap();
        let by_plugin = chunks.iter().all(|c| c.chunker != "fallback");
        let must = file.path.ends_with(".php") || file.path.ends_with(".json") || file.path.contains("tailwind.config.");
        if must && !by_plugin {
            fallbacks.push(file.path.clone());
        }
    }
    assert!(fallbacks.is_empty(), "fell back to line chunks: {fallbacks:?}");

    // A form in a Blade view -> its named route -> the controller method.
    let checkout = store.links_from("resources/views/orders/checkout.blade.php").unwrap();
    let route = checkout.iter().find(|l| l.kind == "route" && l.symbol == "route:orders.store").expect("route link");
    assert_eq!(route.to_path, "routes/web.php");
    assert_eq!(route.to_line, Some(15), "Route::post('/orders', ...) is on line 15");
    let action = checkout.iter().find(|l| l.kind == "route_action").expect("controller action link");
    assert_eq!(action.to_path, "app/Http/Controllers/OrderController.php");
    assert_eq!(action.symbol, "App\\Http\\Controllers\\OrderController::store");
    assert!(has(&checkout, "resources/views/layouts/shop.blade.php", "view"), "{:#?}", describe(&checkout));
    assert!(has(&checkout, "resources/js/checkout.js", "file"), "@vite asset");
    // An anonymous component resolves to its view, a class component to its class.
    assert!(has(&checkout, "resources/views/components/alert.blade.php", "component"));

    let index = store.links_from("resources/views/products/index.blade.php").unwrap();
    assert!(has(&index, "app/View/Components/ProductCard.php", "component"), "{:#?}", describe(&index));
    assert!(has(&index, "app/View/Components/Layouts/App.php", "component"));
    assert!(has(&index, "app/Livewire/ProductSearch.php", "livewire"));
    let layout = store.links_from("resources/views/components/layouts/app.blade.php").unwrap();
    assert!(has(&layout, "app/Livewire/CartCounter.php", "livewire"), "{:#?}", describe(&layout));
    assert!(has(&layout, "resources/views/partials/footer.blade.php", "view"));
    let welcome = store.links_from("resources/views/welcome.blade.php").unwrap();
    assert!(has(&welcome, "app/Livewire/ProductSearch.php", "livewire"), "@livewire('product-search')");

    // "Add a stock field to the product form": the v4 form class leads to its
    // resource, the model, and the migrations of the products table.
    let form = "app/Filament/Clusters/Catalog/Resources/Products/Schemas/ProductForm.php";
    let linked = store.linked_files(form, None).unwrap();
    let paths: Vec<(&str, &str)> = linked.iter().map(|l| (l.path.as_str(), l.kind.as_str())).collect();
    for expected in [
        ("app/Models/Product.php", "model"),
        ("database/migrations/2025_01_10_100100_create_products_table.php", "table"),
        ("database/migrations/2025_02_03_120000_add_sku_to_products_table.php", "table"),
        ("app/Filament/Clusters/Catalog/Resources/Products/ProductResource.php", "filament"),
    ] {
        assert!(paths.contains(&expected), "{expected:?} not linked to the product form: {paths:#?}");
    }
    // ... and the resource finds its form, table and model (v4 delegation).
    let resource = store.links_from("app/Filament/Clusters/Catalog/Resources/Products/ProductResource.php").unwrap();
    assert!(has(&resource, form, "filament"), "{:#?}", describe(&resource));
    assert!(has(&resource, "app/Filament/Clusters/Catalog/Resources/Products/Tables/ProductsTable.php", "filament"));
    assert!(has(&resource, "app/Filament/Clusters/Catalog/CatalogCluster.php", "filament"));
    assert!(has(&resource, "app/Models/Product.php", "model"));
    // The v3 resource: inline form, model and the categories migration.
    let category = store.links_from("app/Filament/Resources/CategoryResource.php").unwrap();
    assert!(has(&category, "app/Models/Category.php", "model"), "{:#?}", describe(&category));
    assert!(has(&category, "database/migrations/2025_01_10_100000_create_categories_table.php", "table"));
    assert!(has(&category, "app/Filament/Resources/CategoryResource/Pages/EditCategory.php", "filament"));

    // A model with `$table` and one named by convention, both ways.
    let order = store.links_from("app/Models/Order.php").unwrap();
    assert!(has(&order, "database/migrations/2025_01_11_090000_create_shop_orders_table.php", "table"), "{:#?}", describe(&order));
    let order_items = store.links_from("database/migrations/2025_01_11_090000_create_shop_orders_table.php").unwrap();
    assert!(has(&order_items, "app/Models/Order.php", "model"), "{:#?}", describe(&order_items));
    assert!(has(&order_items, "app/Models/OrderItem.php", "model"));
    // Foreign keys point at the referenced table's migration.
    assert!(has(&order_items, "database/migrations/0001_01_01_000000_create_users_table.php", "table"));

    // Constructor injection resolves through PSR-4 / the class index.
    let controller = store.links_from("app/Http/Controllers/OrderController.php").unwrap();
    assert!(has(&controller, "app/Services/OrderService.php", "class"), "{:#?}", describe(&controller));
    let service = store.links_from("app/Services/OrderService.php").unwrap();
    assert!(has(&service, "app/Contracts/PaymentGateway.php", "class"));

    // composer.json's autoload `files` entry.
    let composer = store.links_from("composer.json").unwrap();
    assert!(has(&composer, "app/helpers.php", "file"), "{:#?}", describe(&composer));
}

#[test]
fn links_follow_changes_on_the_next_sync() {
    let (dir, mut store) = indexed();
    let host = PluginHost::discover(None, HostOptions::default());
    // Rename the route: the view's link to it disappears.
    let web = dir.path().join("routes/web.php");
    let text = std::fs::read_to_string(&web).unwrap().replace("->name('orders.store')", "->name('orders.place')");
    std::fs::write(&web, text).unwrap();
    sync(dir.path(), &mut store, &host, &Config::default(), SyncOptions::default(), &|_| {}).unwrap();
    let checkout = store.links_from("resources/views/orders/checkout.blade.php").unwrap();
    assert!(!checkout.iter().any(|l| l.kind == "route" && l.symbol == "route:orders.store"), "{:#?}", describe(&checkout));
    // Delete the model: the migration no longer links to it.
    std::fs::remove_file(dir.path().join("app/Models/Order.php")).unwrap();
    sync(dir.path(), &mut store, &host, &Config::default(), SyncOptions::default(), &|_| {}).unwrap();
    let migration = store.links_from("database/migrations/2025_01_11_090000_create_shop_orders_table.php").unwrap();
    assert!(!has(&migration, "app/Models/Order.php", "model"));
}

/// Every link in the index, sorted, origin included.
fn all_links(store: &Store) -> Vec<Link> {
    let mut links: Vec<Link> =
        store.indexed_files().unwrap().iter().flat_map(|f| store.links_from(&f.path).unwrap()).collect();
    links.sort();
    links
}

/// Edits `path` with `edit`, syncs, and checks that the sync updated (or
/// rebuilt) the links as `expected`, and that the table equals what a full
/// rebuild produces.
fn edit_and_check(dir: &Path, store: &mut Store, host: &PluginHost, path: &str, expected: LinksUpdate, edit: impl Fn(String) -> String) {
    let file = dir.join(path);
    let text = std::fs::read_to_string(&file).unwrap();
    let edited = edit(text.clone());
    assert_ne!(text, edited, "the edit of {path} changed nothing");
    std::fs::write(&file, edited).unwrap();
    let report = sync(dir, store, host, &Config::default(), SyncOptions::default(), &|_| {}).unwrap();
    assert_eq!(report.modified, 1, "{report:?}");
    assert_eq!(report.links, expected, "editing {path}");
    let after_sync = all_links(store);
    code_intel_index::links::rebuild(dir, store).unwrap();
    let rebuilt = all_links(store);
    if after_sync != rebuilt {
        let missing: Vec<_> = rebuilt.iter().filter(|l| !after_sync.contains(l)).collect();
        let extra: Vec<_> = after_sync.iter().filter(|l| !rebuilt.contains(l)).collect();
        panic!("after editing {path}, links differ from a full rebuild\nmissing: {missing:#?}\nextra: {extra:#?}");
    }
}

#[test]
fn edits_that_keep_facts_update_links_file_by_file() {
    let (dir, mut store) = indexed();
    let host = PluginHost::discover(None, HostOptions::default());
    let dir = dir.path();
    // Filament resources whose body changes: their own links and (v4) those
    // of the form/table classes they delegate to are produced again.
    edit_and_check(dir, &mut store, &host, "app/Filament/Resources/CategoryResource.php", LinksUpdate::Updated, |t| {
        format!("{t}\n// reviewed\n")
    });
    let v4 = "app/Filament/Clusters/Catalog/Resources/Products/ProductResource.php";
    edit_and_check(dir, &mut store, &host, v4, LinksUpdate::Updated, |t| format!("{t}\n// reviewed\n"));
    let form = store.links_from("app/Filament/Clusters/Catalog/Resources/Products/Schemas/ProductForm.php").unwrap();
    assert!(form.iter().any(|l| l.to_path == v4 && l.origin_path == v4), "{:#?}", describe(&form));
    // A view that starts naming a route and a component.
    edit_and_check(dir, &mut store, &host, "resources/views/welcome.blade.php", LinksUpdate::Updated, |t| {
        format!("{t}\n<x-alert /><a href=\"{{{{ route('orders.store') }}}}\">Order</a>\n")
    });
    let welcome = store.links_from("resources/views/welcome.blade.php").unwrap();
    assert!(has(&welcome, "routes/web.php", "route"), "{:#?}", describe(&welcome));
    // A model whose relation now points elsewhere.
    edit_and_check(dir, &mut store, &host, "app/Models/Review.php", LinksUpdate::Updated, |t| {
        t.replace("return $this->belongsTo(Product::class);", "return $this->belongsTo(Order::class);")
    });
    let review = store.links_from("app/Models/Review.php").unwrap();
    assert!(has(&review, "app/Models/Order.php", "model") || has(&review, "app/Models/Order.php", "class"), "{:#?}", describe(&review));
    // A controller and a Livewire component naming models by class (resolved
    // without reading every model of the index).
    for path in ["app/Http/Controllers/ProductController.php", "app/Livewire/ProductSearch.php"] {
        edit_and_check(dir, &mut store, &host, path, LinksUpdate::Updated, |t| format!("{t}\n// reviewed\n"));
    }
    let controller = store.links_from("app/Http/Controllers/ProductController.php").unwrap();
    assert!(has(&controller, "app/Models/Product.php", "model"), "{:#?}", describe(&controller));
    // Renaming a class changes what other files resolve to: a full rebuild.
    edit_and_check(dir, &mut store, &host, "app/Models/Review.php", LinksUpdate::Rebuilt, |t| {
        t.replace("class Review extends Model", "class ProductReview extends Model")
    });
    // So does editing a routes file.
    edit_and_check(dir, &mut store, &host, "routes/web.php", LinksUpdate::Rebuilt, |t| format!("{t}\n// end\n"));
}
