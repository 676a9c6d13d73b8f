//! Search results carry their linked files, on `fixtures/laravel-app`
//! indexed with the real plugin components (build them first: `cargo xtask
//! plugins`): "add a stock field to the product form" must lead to the form
//! class, the Product model and the migrations of the products table.

mod embed_support;

use std::path::Path;
use std::sync::Arc;

use code_intel_core::config::{Config, database_path};
use code_intel_embed::pipeline::embed_pending;
use code_intel_embed::{Encoder, EncoderOptions, ModelHandle};
use code_intel_index::{SyncOptions, sync};
use code_intel_plugins::{HostOptions, PluginHost};
use code_intel_search::definitions::{DefinitionQuery, find_definitions};
use code_intel_search::hybrid::{Mode, SearchHit, SearchRequest, search};
use code_intel_search::links::{LinkedFile, MAX_LINKED_FILES};
use code_intel_search::semantic::VectorSearch;
use code_intel_store::Store;

const LARAVEL_PLUGINS: &[&str] = &["php", "blade", "filament", "migrations", "composer", "tailwind"];
const FORM: &str = "app/Filament/Clusters/Catalog/Resources/Products/Schemas/ProductForm.php";
const RESOURCE: &str = "app/Filament/Clusters/Catalog/Resources/Products/ProductResource.php";
const MODEL: &str = "app/Models/Product.php";
const CREATE_PRODUCTS: &str = "database/migrations/2025_01_10_100100_create_products_table.php";
const ADD_SKU: &str = "database/migrations/2025_02_03_120000_add_sku_to_products_table.php";

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

/// Indexes a copy of the fixture app; returns the temp dir and the store.
fn indexed() -> (tempfile::TempDir, Store) {
    let host = PluginHost::discover(None, HostOptions::default());
    let loaded: Vec<&str> = host.plugins().map(|p| p.name.as_str()).collect();
    for name in LARAVEL_PLUGINS {
        assert!(loaded.contains(name), "plugin `{name}` is not built (loaded: {loaded:?}); run `cargo xtask plugins` first");
    }
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/laravel-app"), dir.path());
    let mut store = Store::open(&database_path(dir.path())).unwrap();
    sync(dir.path(), &mut store, &host, &Config::default(), SyncOptions::default(), &|_| {}).unwrap();
    (dir, store)
}

fn kinds_of(linked: &[LinkedFile]) -> Vec<(&str, &str)> {
    linked.iter().map(|l| (l.path.as_str(), l.kind.as_str())).collect()
}

fn links_to(linked: &[LinkedFile], path: &str, kind: &str) -> bool {
    linked.iter().any(|l| l.path == path && l.kind == kind)
}

#[test]
fn definitions_carry_the_model_the_migrations_and_the_form() {
    let (_dir, store) = indexed();

    // The v4 resource: model first, then its table's migrations, then the
    // form, table and infolist classes it delegates to.
    let found = find_definitions(&store, &DefinitionQuery { kinds: vec!["filament_resource".into()], ..DefinitionQuery::new("ProductResource") })
        .unwrap();
    let resource = found.definitions.iter().find(|d| d.path == RESOURCE).expect("the Filament product resource");
    let linked = &resource.linked_files;
    assert!(linked.len() <= MAX_LINKED_FILES);
    assert_eq!((linked[0].path.as_str(), linked[0].kind.as_str()), (MODEL, "model"), "{:#?}", kinds_of(linked));
    assert_eq!(linked[0].via, "App\\Models\\Product");
    for (path, kind) in [(CREATE_PRODUCTS, "table"), (ADD_SKU, "table"), (FORM, "filament")] {
        assert!(links_to(linked, path, kind), "{path} ({kind}) not linked to the resource: {:#?}", kinds_of(linked));
    }
    // The API resource of the same short name is a plain class: no Filament ties.
    let api = find_definitions(&store, &DefinitionQuery::new("App\\Http\\Resources\\ProductResource")).unwrap();
    assert!(api.definitions.iter().all(|d| !links_to(&d.linked_files, FORM, "filament")), "{:#?}", api.definitions);

    // The form class: the model, both migrations, and its resource (which names it).
    let form = find_definitions(&store, &DefinitionQuery::new("ProductForm")).unwrap();
    let class = form.definitions.iter().find(|d| d.path == FORM && d.kind == "class").expect("the form class");
    for (path, kind) in [(MODEL, "model"), (CREATE_PRODUCTS, "table"), (ADD_SKU, "table"), (RESOURCE, "filament")] {
        assert!(links_to(&class.linked_files, path, kind), "{path} ({kind}) not linked to the form: {:#?}", kinds_of(&class.linked_files));
    }
    // Its `configure` method inherits the class's ties.
    let configure = find_definitions(&store, &DefinitionQuery::new("ProductForm::configure")).unwrap();
    let method = configure.definitions.iter().find(|d| d.path == FORM).expect("ProductForm::configure");
    assert!(links_to(&method.linked_files, CREATE_PRODUCTS, "table"), "{:#?}", kinds_of(&method.linked_files));

    // The model leads back to its migrations; a migration to its model.
    let model = find_definitions(&store, &DefinitionQuery::new("App\\Models\\Product")).unwrap();
    assert!(links_to(&model.definitions[0].linked_files, CREATE_PRODUCTS, "table"), "{:#?}", model.definitions);
    assert!(links_to(&model.definitions[0].linked_files, ADD_SKU, "table"));

    // Without links asked for, none are read.
    let bare = find_definitions(&store, &DefinitionQuery { links: 0, ..DefinitionQuery::new("ProductForm") }).unwrap();
    assert!(bare.definitions.iter().all(|d| d.linked_files.is_empty()));

    // Plain search results carry them too (keywords only, no model needed).
    let mut request = SearchRequest::new("ProductForm configure");
    request.mode = Some(Mode::Lexical);
    let res = search(&store, None, &request).unwrap();
    let hit = res.hits.iter().find(|h| h.file == FORM).unwrap_or_else(|| panic!("{:#?}", res.hits));
    assert!(links_to(&hit.linked_files, CREATE_PRODUCTS, "table"), "{:#?}", kinds_of(&hit.linked_files));
    assert!(links_to(&hit.linked_files, MODEL, "model"));
}

fn describe(hits: &[SearchHit]) -> Vec<String> {
    hits.iter().map(|h| format!("{}:{} {} -> {:?}", h.file, h.start_line, h.name, kinds_of(&h.linked_files))).collect()
}

#[test]
fn a_question_about_the_product_form_leads_to_the_form_and_the_migration() {
    let Some(model_dir) = embed_support::real_model_dir("a_question_about_the_product_form_leads_to_the_form_and_the_migration")
    else {
        return;
    };
    let (dir, mut store) = indexed();
    let encoder = Arc::new(Encoder::load(&embed_support::real_model(&model_dir), &EncoderOptions::default()).expect("the test model loads"));
    embed_pending(&mut store, &encoder, &|_| {}, None).unwrap();
    let vectors = VectorSearch::new(ModelHandle::ready(Arc::clone(&encoder)), Some(dir.path().join("vectors")));

    let request = SearchRequest::new("add a stock field to the product form");
    let res = search(&store, Some(&vectors), &request).unwrap();
    assert_eq!(res.mode, Mode::Hybrid);
    let hits = &res.hits;
    // Either the form itself is found and names the products migrations, or
    // a products migration is found and names the form: both lead to both.
    let form_hit = hits.iter().find(|h| h.file == FORM);
    let migration_hit = hits.iter().find(|h| h.file == CREATE_PRODUCTS || h.file == ADD_SKU);
    let reaches_form = form_hit.is_some() || hits.iter().any(|h| links_to(&h.linked_files, FORM, "table"));
    let reaches_migration = migration_hit.is_some()
        || hits.iter().any(|h| links_to(&h.linked_files, CREATE_PRODUCTS, "table") || links_to(&h.linked_files, ADD_SKU, "table"));
    assert!(reaches_form && reaches_migration, "{:#?}", describe(hits));
    if let Some(form) = form_hit {
        assert!(links_to(&form.linked_files, CREATE_PRODUCTS, "table"), "{:#?}", describe(hits));
        assert!(links_to(&form.linked_files, ADD_SKU, "table"));
        assert!(links_to(&form.linked_files, MODEL, "model"));
    }
    if let Some(migration) = migration_hit {
        assert!(links_to(&migration.linked_files, FORM, "table"), "{:#?}", describe(hits));
    }
    for h in hits {
        assert!(h.linked_files.len() <= MAX_LINKED_FILES);
        eprintln!("{}:{} {} -> {:?}", h.file, h.start_line, h.name, kinds_of(&h.linked_files));
    }
}
