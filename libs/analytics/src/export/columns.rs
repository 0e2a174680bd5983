//! A table's columns, listed once. `table!` takes one list of columns (each a name and
//! a [`Kind`]) and makes from it the three things that must agree on it: the Arrow
//! schema written to Parquet, a builder holding one Arrow builder per column (finished in
//! the list's order, so a batch always fits the schema), and a reader that finds each
//! column of a record batch by its name, as the array its kind reads back as.

use std::marker::PhantomData;
use std::sync::Arc;

use anyhow::Context as _;
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int16Builder, Int32Builder, ListBuilder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int16Array, Int32Array, ListArray, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, TimeUnit};

/// What a column holds: its Arrow type, how it is built and what it reads back as.
pub trait Kind {
    /// The Arrow builder that gathers the column's rows.
    type Builder;
    /// The array a batch's column of this kind is.
    type Array: Array + 'static;
    /// Whether the column may hold nulls (only [`Nullable`] says so).
    const NULLABLE: bool = false;
    /// The column's type in the schema.
    fn data_type() -> DataType;
    /// A builder with no rows.
    fn builder() -> Self::Builder;
    /// The rows built so far, as the schema types them; the builder starts empty again.
    fn finish(builder: &mut Self::Builder) -> ArrayRef;
}

/// A string column.
#[derive(Debug)]
pub enum Utf8 {}

/// A boolean column.
#[derive(Debug)]
pub enum Boolean {}

/// A 16-bit integer column.
#[derive(Debug)]
pub enum Int16 {}

/// A 32-bit integer column.
#[derive(Debug)]
pub enum Int32 {}

/// A 64-bit float column.
#[derive(Debug)]
pub enum Float64 {}

/// A time: microseconds since the epoch, in UTC.
#[derive(Debug)]
pub enum Timestamp {}

/// A list of strings (card names), each item nullable as Arrow's default list field.
#[derive(Debug)]
pub enum Utf8List {}

/// The column of kind `K` that may hold nulls.
#[derive(Debug)]
pub struct Nullable<K>(PhantomData<K>);

macro_rules! primitive_kinds {
    ($($kind:ident: $data_type:expr, $builder:ty, $array:ty;)+) => {$(
        impl Kind for $kind {
            type Builder = $builder;
            type Array = $array;

            fn data_type() -> DataType {
                $data_type
            }

            fn builder() -> $builder {
                <$builder>::new()
            }

            fn finish(builder: &mut $builder) -> ArrayRef {
                Arc::new(builder.finish())
            }
        }
    )+};
}

primitive_kinds! {
    Utf8: DataType::Utf8, StringBuilder, StringArray;
    Boolean: DataType::Boolean, BooleanBuilder, BooleanArray;
    Int16: DataType::Int16, Int16Builder, Int16Array;
    Int32: DataType::Int32, Int32Builder, Int32Array;
    Float64: DataType::Float64, Float64Builder, Float64Array;
}

impl Kind for Timestamp {
    type Builder = TimestampMicrosecondBuilder;
    type Array = TimestampMicrosecondArray;

    fn data_type() -> DataType {
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
    }

    fn builder() -> TimestampMicrosecondBuilder {
        TimestampMicrosecondBuilder::new()
    }

    fn finish(builder: &mut TimestampMicrosecondBuilder) -> ArrayRef {
        Arc::new(builder.finish().with_timezone("UTC"))
    }
}

fn list_item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Utf8, true))
}

impl Kind for Utf8List {
    type Builder = ListBuilder<StringBuilder>;
    type Array = ListArray;

    fn data_type() -> DataType {
        DataType::List(list_item())
    }

    fn builder() -> ListBuilder<StringBuilder> {
        ListBuilder::new(StringBuilder::new()).with_field(list_item())
    }

    fn finish(builder: &mut ListBuilder<StringBuilder>) -> ArrayRef {
        Arc::new(builder.finish())
    }
}

impl<K: Kind> Kind for Nullable<K> {
    type Builder = K::Builder;
    type Array = K::Array;
    const NULLABLE: bool = true;

    fn data_type() -> DataType {
        K::data_type()
    }

    fn builder() -> K::Builder {
        K::builder()
    }

    fn finish(builder: &mut K::Builder) -> ArrayRef {
        K::finish(builder)
    }
}

/// The schema's field for column `name` of kind `K`.
pub fn field<K: Kind>(name: &str) -> Field {
    Field::new(name, K::data_type(), K::NULLABLE)
}

/// Column `column` of `batch`, a batch of `table`, as kind `K` reads back.
pub fn read<'a, K: Kind>(
    batch: &'a RecordBatch,
    table: &str,
    column: &str,
) -> anyhow::Result<&'a K::Array> {
    batch
        .column_by_name(column)
        .with_context(|| format!("{table} has no column {column}"))?
        .as_any()
        .downcast_ref::<K::Array>()
        .with_context(|| format!("{table}.{column} is not {}", K::data_type()))
}

/// Declares a table from its one list of columns (`name: Kind`, in the schema's order):
/// the schema as a static, a builder (`Default`, `len`, `is_empty`, `finish`; each
/// column's builder is a field of the column's name, filled by the table's own `push`,
/// which counts the row in `rows`) and a reader (`new(&batch)`, then one method per column).
macro_rules! table {
    (
        $table:literal;
        $schema_vis:vis static $schema:ident;
        $builder_vis:vis struct $builder:ident;
        $reader_vis:vis struct $reader:ident;
        columns { $($column:ident: $kind:ty),+ $(,)? }
    ) => {
        #[doc = concat!("The schema of `", $table, "` (a public contract: columns are only added at the end).")]
        $schema_vis static $schema: ::std::sync::LazyLock<::arrow_schema::SchemaRef> =
            ::std::sync::LazyLock::new(|| {
                ::std::sync::Arc::new(::arrow_schema::Schema::new(vec![
                    $($crate::export::columns::field::<$kind>(stringify!($column)),)+
                ]))
            });

        #[doc = concat!("Rows of the `", $table, "` table being built.")]
        #[derive(Debug)]
        $builder_vis struct $builder {
            $($column: <$kind as $crate::export::columns::Kind>::Builder,)+
            rows: usize,
        }

        impl Default for $builder {
            fn default() -> $builder {
                $builder {
                    $($column: <$kind as $crate::export::columns::Kind>::builder(),)+
                    rows: 0,
                }
            }
        }

        impl $builder {
            /// Rows so far.
            $builder_vis fn len(&self) -> usize {
                self.rows
            }

            /// Whether there are none.
            $builder_vis fn is_empty(&self) -> bool {
                self.rows == 0
            }

            /// The rows as a batch; the builder starts empty again.
            $builder_vis fn finish(&mut self) -> ::arrow_array::RecordBatch {
                let columns: Vec<::arrow_array::ArrayRef> = vec![
                    $(<$kind as $crate::export::columns::Kind>::finish(&mut self.$column),)+
                ];
                self.rows = 0;
                ::arrow_array::RecordBatch::try_new($schema.clone(), columns)
                    .expect("the columns follow the schema")
            }
        }

        #[doc = concat!(
            "The columns of a batch of the `", $table, "` table, each found by its name ",
            "(an error names a column that is missing or of another type)."
        )]
        #[derive(Debug, Clone, Copy)]
        $reader_vis struct $reader<'a>(&'a ::arrow_array::RecordBatch);

        impl<'a> $reader<'a> {
            /// The columns of `batch`.
            $reader_vis fn new(batch: &'a ::arrow_array::RecordBatch) -> $reader<'a> {
                $reader(batch)
            }

            $(
                #[doc = concat!("`", $table, ".", stringify!($column), "`.")]
                $reader_vis fn $column(
                    &self,
                ) -> ::anyhow::Result<&'a <$kind as $crate::export::columns::Kind>::Array> {
                    $crate::export::columns::read::<$kind>(self.0, $table, stringify!($column))
                }
            )+
        }
    };
}

pub(crate) use table;
