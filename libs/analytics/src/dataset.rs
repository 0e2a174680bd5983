//! Reading an export back: the Parquet files of a table under `DIR/<table>/date=…/`, in
//! partition order, as Arrow record batches. Used by the report and the tests; any
//! Parquet reader (DuckDB, Spark, pandas) reads the same files.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::export::tables::Table;

/// The finished Parquet files of `table` under `root`, sorted by day then name.
pub fn files(root: &Path, table: Table) -> anyhow::Result<Vec<PathBuf>> {
    let dir = root.join(table.name());
    let mut files = Vec::new();
    let days = match std::fs::read_dir(&dir) {
        Ok(days) => days,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(err) => return Err(err).with_context(|| format!("cannot list {}", dir.display())),
    };
    for day in days {
        let day = day?.path();
        if !day
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("date="))
        {
            continue;
        }
        for file in std::fs::read_dir(&day)? {
            let path = file?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("part-") && name.ends_with(".parquet") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Calls `each` with every record batch of `table` (only `columns`, by name; all when
/// empty), file by file.
pub fn for_each_batch(
    root: &Path,
    table: Table,
    columns: &[&str],
    mut each: impl FnMut(&RecordBatch) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    for path in files(root, table)? {
        let file = File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        let mut builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .with_context(|| format!("{} is not Parquet", path.display()))?;
        if !columns.is_empty() {
            let schema = builder.parquet_schema();
            let indices: Vec<usize> = columns
                .iter()
                .map(|name| {
                    schema
                        .columns()
                        .iter()
                        .position(|c| c.path().parts()[0] == *name)
                        .with_context(|| format!("{} has no column {name}", path.display()))
                })
                .collect::<anyhow::Result<_>>()?;
            let mask = parquet::arrow::ProjectionMask::leaves(schema, indices);
            builder = builder.with_projection(mask);
        }
        for batch in builder.with_batch_size(8_192).build()? {
            each(&batch?)?;
        }
    }
    Ok(())
}
