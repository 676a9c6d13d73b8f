//! Helpers shared by the Laravel-family plugins (filament, migrations,
//! blade): the PHP facts they all need from the host's `php` grammar
//! (namespace, `use` imports, classes, methods, properties), the fluent call
//! chains Laravel DSLs are written in (`TextInput::make('name')->required()`,
//! `$table->string('email')->unique()`), and the chunks every PHP file gets
//! (a class skeleton and its methods), so a specialised plugin that takes a
//! PHP file away from the general PHP plugin still yields its definitions.
//!
//! This crate is a plain library (no component of its own); it depends only
//! on the guest SDK and must not grow a parser: parsing is the host's.

pub mod calls;
pub mod names;
pub mod php;

pub use calls::{Call, CallKind, Calls};
pub use names::{kebab_to_studly, pluralize, singularize, snake_case};
pub use php::{ClassInfo, MethodInfo, PhpFile, PropertyInfo};
