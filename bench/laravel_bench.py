#!/usr/bin/env python3
"""Benchmark of indexing Laravel projects with the Laravel-family plugins.

Measures, with the real plugin components (build them: `cargo xtask plugins`):
  1. `fixtures/laravel-app`: full index wall time, files, chunks, links;
  2. a generated Laravel-shaped tree (default 2,000 files: models, controllers,
     services, Filament v3 and v4 resources with their form/table classes,
     migrations creating and altering tables, Blade views with components,
     Livewire and routes, routes files, composer.json files, a Tailwind config,
     plus some plain JS/CSS): full index wall time and files/s, then a re-sync
     after touching one view (the edit keeps the view's facts, so only its
     cross-file links are resolved again; the report says which happened);
  3. for both: the share of files that fell back to line chunks, per file type
     (goal: 0 for PHP, Blade, JSON and JS config files), read from the index
     database, and the number of cross-file links.

Usage:
  python3 bench/laravel_bench.py [--bin PATH] [--files 2000] [--keep DIR]

The binary defaults to $CODE_INTEL_BIN, else $CARGO_TARGET_DIR/release/code-intel.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def default_bin() -> str:
    if os.environ.get("CODE_INTEL_BIN"):
        return os.environ["CODE_INTEL_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", str(REPO / "target"))
    return str(Path(target) / "release" / "code-intel")


def file_type(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".blade.php"):
        return "blade"
    if name.endswith(".php"):
        return "php"
    if name.endswith(".json"):
        return "json"
    if name.startswith("tailwind.config.") or name.endswith(".config.js"):
        return "js config"
    return "other (" + (name.rsplit(".", 1)[-1] if "." in name else name) + ")"


def index(bin_path: str, root: Path, force: bool = False) -> tuple[float, dict]:
    args = [bin_path, "index", str(root), "--json"] + (["--force"] if force else [])
    start = time.perf_counter()
    out = subprocess.run(args, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    return wall, json.loads(out.stdout)


def fallback_shares(root: Path) -> tuple[dict, int]:
    db = sqlite3.connect(root / ".code-intel" / "index.db")
    by_type: dict[str, list[int]] = {}
    for path, chunker in db.execute("SELECT path, chunker FROM files"):
        entry = by_type.setdefault(file_type(path), [0, 0])
        entry[0] += 1
        entry[1] += chunker == "fallback"
    links = db.execute("SELECT count(*) FROM links").fetchone()[0]
    db.close()
    return {k: {"files": v[0], "fallback": v[1], "share": round(v[1] / v[0], 3)} for k, v in sorted(by_type.items())}, links


# --------------------------------------------------------------------------
# Generated tree

ENTITIES = ["Product", "Order", "Invoice", "Customer", "Supplier", "Shipment", "Coupon", "Review", "Category", "Warehouse"]


def studly(i: int) -> str:
    return f"{ENTITIES[i % len(ENTITIES)]}{i}"


def snake_plural(name: str) -> str:
    out = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    return out[:-1] + "ies" if out.endswith("y") else out + "s"


def model(name: str, i: int) -> str:
    other = studly(i + 1)
    table = f"\n    protected $table = 'legacy_{snake_plural(name)}';\n" if i % 7 == 0 else ""
    return f"""<?php

namespace App\\Models;

use Illuminate\\Database\\Eloquent\\Model;
use Illuminate\\Database\\Eloquent\\Relations\\BelongsTo;
use Illuminate\\Database\\Eloquent\\Relations\\HasMany;
use Spatie\\Translatable\\HasTranslations;

/**
 * {name}: generated model {i}.
 */
class {name} extends Model
{{
    use HasTranslations;
{table}
    public array $translatable = ['name', 'description'];

    protected $fillable = ['name', 'description', 'price', '{snake_plural(other)[:-1]}_id'];

    protected $casts = ['price' => 'decimal:2', 'active' => 'boolean'];

    public function {other[0].lower() + other[1:]}(): BelongsTo
    {{
        return $this->belongsTo({other}::class);
    }}

    public function items(): HasMany
    {{
        return $this->hasMany({name}Item::class);
    }}

    public function scopeActive($query)
    {{
        return $query->where('active', true);
    }}
}}
"""


def service(name: str) -> str:
    return f"""<?php

namespace App\\Services;

use App\\Models\\{name};
use Illuminate\\Support\\Facades\\DB;

class {name}Service
{{
    public function __construct(private AuditLog $audit, private int $pageSize = 25)
    {{
    }}

    public function create(array $data): {name}
    {{
        return DB::transaction(function () use ($data) {{
            $record = {name}::create($data);
            $this->audit->record('{name} created', $record);

            return $record;
        }});
    }}

    public function archive({name} $record): void
    {{
        $record->update(['active' => false]);
    }}
}}
"""


def controller(name: str, route: str) -> str:
    return f"""<?php

namespace App\\Http\\Controllers;

use App\\Models\\{name};
use App\\Services\\{name}Service;
use Illuminate\\Http\\Request;

class {name}Controller extends Controller
{{
    public function __construct(private {name}Service $service)
    {{
    }}

    public function index()
    {{
        return view('{route}.index', ['items' => {name}::query()->paginate()]);
    }}

    public function store(Request $request)
    {{
        $record = $this->service->create($request->validate(['name' => 'required']));

        return to_route('{route}.show', $record);
    }}

    public function show({name} $record)
    {{
        return view('{route}.show', ['record' => $record]);
    }}
}}
"""


def migration(name: str, i: int) -> tuple[str, str]:
    table = snake_plural(name)
    other = snake_plural(studly(i + 1))
    create = f"""<?php

use Illuminate\\Database\\Migrations\\Migration;
use Illuminate\\Database\\Schema\\Blueprint;
use Illuminate\\Support\\Facades\\Schema;

return new class extends Migration
{{
    public function up(): void
    {{
        Schema::create('{table}', function (Blueprint $table) {{
            $table->id();
            $table->foreignId('{other[:-1]}_id')->constrained('{other}')->cascadeOnDelete();
            $table->json('name');
            $table->json('description')->nullable();
            $table->decimal('price', 10, 2)->default(0);
            $table->boolean('active')->default(true)->index();
            $table->timestamps();
        }});
    }}

    public function down(): void
    {{
        Schema::dropIfExists('{table}');
    }}
}};
"""
    alter = f"""<?php

use Illuminate\\Database\\Migrations\\Migration;
use Illuminate\\Database\\Schema\\Blueprint;
use Illuminate\\Support\\Facades\\Schema;

return new class extends Migration
{{
    public function up(): void
    {{
        Schema::table('{table}', function (Blueprint $table) {{
            $table->string('sku', 32)->nullable()->unique()->after('id');
            $table->unsignedInteger('stock')->default(0);
        }});
    }}

    public function down(): void
    {{
        Schema::table('{table}', function (Blueprint $table) {{
            $table->dropColumn(['sku', 'stock']);
        }});
    }}
}};
"""
    return create, alter


def filament_v3(name: str) -> str:
    return f"""<?php

namespace App\\Filament\\Resources;

use App\\Filament\\Resources\\{name}Resource\\Pages;
use App\\Models\\{name};
use Filament\\Forms;
use Filament\\Forms\\Form;
use Filament\\Resources\\Resource;
use Filament\\Tables;
use Filament\\Tables\\Table;

class {name}Resource extends Resource
{{
    protected static ?string $model = {name}::class;

    protected static ?string $navigationIcon = 'heroicon-o-rectangle-stack';

    protected static ?string $navigationGroup = 'Catalog';

    public static function form(Form $form): Form
    {{
        return $form->schema([
            Forms\\Components\\TextInput::make('name')->required()->maxLength(255),
            Forms\\Components\\Textarea::make('description'),
            Forms\\Components\\TextInput::make('price')->numeric(),
            Forms\\Components\\Toggle::make('active'),
        ]);
    }}

    public static function table(Table $table): Table
    {{
        return $table
            ->columns([
                Tables\\Columns\\TextColumn::make('name')->searchable(),
                Tables\\Columns\\TextColumn::make('price')->money('EUR'),
            ])
            ->actions([Tables\\Actions\\EditAction::make()])
            ->bulkActions([Tables\\Actions\\DeleteBulkAction::make()]);
    }}

    public static function getPages(): array
    {{
        return [
            'index' => Pages\\List{name}s::route('/'),
            'edit' => Pages\\Edit{name}::route('/{{record}}/edit'),
        ];
    }}
}}
"""


def filament_v4(name: str) -> dict[str, str]:
    ns = f"App\\Filament\\Clusters\\Shop\\Resources\\{name}s"
    base = f"app/Filament/Clusters/Shop/Resources/{name}s"
    return {
        f"{base}/{name}Resource.php": f"""<?php

namespace {ns};

use {ns}\\Schemas\\{name}Form;
use {ns}\\Tables\\{name}sTable;
use App\\Filament\\Clusters\\Shop\\ShopCluster;
use App\\Models\\{name};
use BackedEnum;
use Filament\\Resources\\Resource;
use Filament\\Schemas\\Schema;
use Filament\\Support\\Icons\\Heroicon;
use Filament\\Tables\\Table;

class {name}Resource extends Resource
{{
    protected static ?string $model = {name}::class;

    protected static ?string $cluster = ShopCluster::class;

    protected static string|BackedEnum|null $navigationIcon = Heroicon::OutlinedCube;

    public static function form(Schema $schema): Schema
    {{
        return {name}Form::configure($schema);
    }}

    public static function table(Table $table): Table
    {{
        return {name}sTable::configure($table);
    }}
}}
""",
        f"{base}/Schemas/{name}Form.php": f"""<?php

namespace {ns}\\Schemas;

use Filament\\Forms\\Components\\TextInput;
use Filament\\Forms\\Components\\Toggle;
use Filament\\Schemas\\Components\\Section;
use Filament\\Schemas\\Schema;

class {name}Form
{{
    public static function configure(Schema $schema): Schema
    {{
        return $schema->components([
            Section::make('Details')->schema([
                TextInput::make('name')->required(),
                TextInput::make('sku')->maxLength(32),
                TextInput::make('price')->numeric()->prefix('€'),
                Toggle::make('active'),
            ]),
        ]);
    }}
}}
""",
        f"{base}/Tables/{name}sTable.php": f"""<?php

namespace {ns}\\Tables;

use Filament\\Actions\\EditAction;
use Filament\\Tables\\Columns\\TextColumn;
use Filament\\Tables\\Filters\\TernaryFilter;
use Filament\\Tables\\Table;

class {name}sTable
{{
    public static function configure(Table $table): Table
    {{
        return $table
            ->columns([TextColumn::make('name')->searchable(), TextColumn::make('sku')])
            ->filters([TernaryFilter::make('active')])
            ->recordActions([EditAction::make()]);
    }}
}}
""",
    }


def views(name: str, route: str) -> dict[str, str]:
    return {
        f"resources/views/{route}/index.blade.php": f"""<x-layouts.app :title="__('{name}s')">
    <section id="{route}-list" class="grid gap-4">
        @foreach ($items as $item)
            <x-{route}-card :item="$item" />
        @endforeach
    </section>
    <livewire:{route}-search />
    {{{{ $items->links() }}}}
</x-layouts.app>
""",
        f"resources/views/{route}/show.blade.php": f"""@extends('layouts.shop')

@section('title', $record->name)

@section('content')
    <article id="{route}-detail">
        <h1>{{{{ $record->name }}}}</h1>
        <p>{{{{ $record->description }}}}</p>
        <form method="POST" action="{{{{ route('{route}.store') }}}}">
            @csrf
            <button>{{{{ __('Save') }}}}</button>
        </form>
    </article>
@endsection

@push('scripts')
    @vite('resources/js/{route}.js')
@endpush
""",
        f"resources/views/components/{route}-card.blade.php": f"""@props(['item'])

<div {{{{ $attributes->merge(['class' => 'card']) }}}}>
    <a href="{{{{ route('{route}.show', $item) }}}}">{{{{ $item->name }}}}</a>
</div>
""",
    }


def generate(root: Path, files: int) -> None:
    def write(path: str, text: str) -> None:
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    shutil.copy(REPO / "fixtures/laravel-app/composer.json", root / "composer.json")
    shutil.copy(REPO / "fixtures/laravel-app/tailwind.config.js", root / "tailwind.config.js")
    write("app/Http/Controllers/Controller.php", "<?php\n\nnamespace App\\Http\\Controllers;\n\nabstract class Controller\n{\n}\n")
    write("app/Services/AuditLog.php", "<?php\n\nnamespace App\\Services;\n\nclass AuditLog\n{\n    public function record(string $event, object $subject): void\n    {\n    }\n}\n")
    routes = ["<?php", "", "use Illuminate\\Support\\Facades\\Route;", ""]
    count = 4
    i = 0
    while count < files:
        name = studly(i)
        route = snake_plural(name).replace("_", "-")
        batch: dict[str, str] = {
            f"app/Models/{name}.php": model(name, i),
            f"app/Services/{name}Service.php": service(name),
            f"app/Http/Controllers/{name}Controller.php": controller(name, route),
        }
        create, alter = migration(name, i)
        batch[f"database/migrations/2025_01_01_{i:06d}_create_{snake_plural(name)}_table.php"] = create
        batch[f"database/migrations/2025_06_01_{i:06d}_add_stock_to_{snake_plural(name)}_table.php"] = alter
        if i % 2 == 0:
            batch[f"app/Filament/Resources/{name}Resource.php"] = filament_v3(name)
        else:
            batch.update(filament_v4(name))
        batch.update(views(name, route))
        if i % 5 == 0:
            batch[f"resources/js/{route}.js"] = f"export function init{name}() {{\n    document.getElementById('{route}-list');\n}}\n"
        if i % 25 == 0:
            batch[f"packages/module{i}/composer.json"] = json.dumps(
                {"name": f"acme/module{i}", "require": {"php": "^8.2"}, "autoload": {"psr-4": {f"Acme\\Module{i}\\": "src/"}}}, indent=4
            ) + "\n"
        for path, text in batch.items():
            if count >= files:
                break
            write(path, text)
            count += 1
        routes.append(f"Route::get('/{route}', [App\\Http\\Controllers\\{name}Controller::class, 'index'])->name('{route}.index');")
        routes.append(f"Route::post('/{route}', [App\\Http\\Controllers\\{name}Controller::class, 'store'])->name('{route}.store');")
        routes.append(f"Route::get('/{route}/{{record}}', [App\\Http\\Controllers\\{name}Controller::class, 'show'])->name('{route}.show');")
        i += 1
    write("routes/web.php", "\n".join(routes) + "\n")


def report(label: str, root: Path, wall: float, sync: dict) -> None:
    shares, links = fallback_shares(root)
    files = sync["total_files"]
    print(f"\n## {label}")
    print(f"files {files}, chunks {sync['total_chunks']}, links {links}")
    print(f"index wall {wall * 1000:.0f} ms (sync {sync['elapsed_ms']} ms), {files / wall:.0f} files/s")
    print("fallback to line chunks by file type:")
    for kind, v in shares.items():
        print(f"  {kind:14} {v['fallback']:5} / {v['files']:5} files  ({v['share'] * 100:.1f} %)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=default_bin())
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--keep", type=Path, help="generate the tree here and keep it")
    args = parser.parse_args()
    if not Path(args.bin).is_file():
        print(f"no binary at {args.bin}: build it (cargo build --release -p code-intel) or pass --bin", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "laravel-app"
        shutil.copytree(REPO / "fixtures/laravel-app", app)
        wall, sync = index(args.bin, app)
        report("fixtures/laravel-app", app, wall, sync)

        tree = args.keep or Path(tmp) / "generated"
        if tree.exists():
            shutil.rmtree(tree)
        tree.mkdir(parents=True)
        generate(tree, args.files)
        wall, sync = index(args.bin, tree)
        report(f"generated Laravel tree ({args.files} files)", tree, wall, sync)

        view = next((tree / "resources/views").rglob("show.blade.php"))
        time.sleep(0.01)
        view.write_text(view.read_text() + "\n{{-- touched --}}\n")
        wall, sync = index(args.bin, tree)
        print(f"re-sync after touching one view: {wall * 1000:.0f} ms wall (sync {sync['elapsed_ms']} ms, links {sync.get('links')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
