//! Parquet files partitioned by day: `DIR/<table>/date=YYYY-MM-DD/part-<run>.parquet`.
//!
//! Records arrive in day order, so one day is open at a time: its four files are written
//! under a temporary name and renamed into place when the day is done, so a reader never
//! sees half a file (and a file of the same name, left by an interrupted run, is replaced
//! whole). Each finished file can be handed on as it is renamed ([`PartitionedSink::hand_on`]:
//! the upload to object storage). Rows are handed to the Parquet writer in batches and written in row
//! groups of bounded size: memory stays flat however many records go through.
//!
//! Parquet encoding (dictionaries, levels, compression) was most of the export's own CPU
//! time, on the one thread that also builds the rows: each open file now encodes on a
//! thread of its own, at most [`ENCODER_BACKLOG`] batches behind the sink.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use chrono::NaiveDate;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::replay::PlayRow;
use super::source::StoredMatch;
use super::tables::{
    MatchPlayersBuilder, MatchesBuilder, PlaysBuilder, RoundsBuilder, TABLES, Table,
};

/// Rows gathered before they go to the Parquet writer as one batch.
const BATCH_ROWS: usize = 8_192;
/// The largest row group, in rows.
const ROW_GROUP_ROWS: usize = 131_072;

/// Batches waiting for a file's encoder thread.
pub const ENCODER_BACKLOG: usize = 2;

/// Columns that take a new value on (nearly) every row and grow within a match: a
/// dictionary only costs there, deltas are small.
const DELTA_COLUMNS: [(&str, &[&str]); 1] = [("plays", &["turn", "action_index", "at"])];

/// How every file of `table` is encoded (also when erasure rewrites one).
pub fn writer_properties(table: Table) -> WriterProperties {
    let mut props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_size(ROW_GROUP_ROWS)
        .set_created_by("basra analytics export".to_owned());
    for (_, columns) in DELTA_COLUMNS.iter().filter(|(t, _)| *t == table.name()) {
        for column in *columns {
            let path = ColumnPath::from(*column);
            props = props
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
        }
    }
    props.build()
}

/// An error writing the export.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// A Parquet file being encoded on a thread of its own.
struct Encoder {
    batches: Option<SyncSender<RecordBatch>>,
    thread: Option<JoinHandle<Result<(), SinkError>>>,
}

impl Encoder {
    fn start(mut writer: ArrowWriter<File>) -> Result<Encoder, SinkError> {
        let (batches, received) = sync_channel::<RecordBatch>(ENCODER_BACKLOG);
        let thread = std::thread::Builder::new()
            .name("export-parquet".to_owned())
            .spawn(move || -> Result<(), SinkError> {
                for batch in received {
                    writer.write(&batch)?;
                }
                writer.close()?;
                Ok(())
            })?;
        Ok(Encoder {
            batches: Some(batches),
            thread: Some(thread),
        })
    }

    fn write(&mut self, batch: RecordBatch) -> Result<(), SinkError> {
        let sent = self
            .batches
            .as_ref()
            .map(|batches| batches.send(batch).is_ok());
        if sent == Some(true) {
            return Ok(());
        }
        // The thread stopped on an error: that error is the answer.
        match self.finish() {
            Err(err) => Err(err),
            Ok(()) => Err("the Parquet encoder stopped early".into()),
        }
    }

    /// Writes the file's footer and waits for the thread.
    fn finish(&mut self) -> Result<(), SinkError> {
        drop(self.batches.take());
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| SinkError::from("the Parquet encoder panicked"))?,
            None => Ok(()),
        }
    }
}

struct OpenFile {
    encoder: Encoder,
    temp: PathBuf,
    path: PathBuf,
    rows: u64,
}

/// The writer of one export run.
pub struct PartitionedSink {
    root: PathBuf,
    run: String,
    day: Option<NaiveDate>,
    files: Vec<Option<OpenFile>>,
    matches: MatchesBuilder,
    players: MatchPlayersBuilder,
    rounds: RoundsBuilder,
    plays: PlaysBuilder,
    written: Vec<PathBuf>,
    rows: [u64; 4],
    closed: Option<tokio::sync::mpsc::Sender<PathBuf>>,
}

impl std::fmt::Debug for PartitionedSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionedSink")
            .field("root", &self.root)
            .field("run", &self.run)
            .field("day", &self.day)
            .finish_non_exhaustive()
    }
}

impl PartitionedSink {
    /// A sink writing under `root`; `run` names this run's files.
    pub fn new(root: &Path, run: &str) -> PartitionedSink {
        PartitionedSink {
            root: root.to_owned(),
            run: run.to_owned(),
            day: None,
            files: (0..TABLES.len()).map(|_| None).collect(),
            matches: MatchesBuilder::default(),
            players: MatchPlayersBuilder::default(),
            rounds: RoundsBuilder::default(),
            plays: PlaysBuilder::default(),
            written: Vec::new(),
            rows: [0; 4],
            closed: None,
        }
    }

    /// Sends each file, once finished and renamed into place, to `closed` (waiting while
    /// the channel is full: the receiver bounds how many finished files wait). A closed
    /// channel fails the sink.
    pub fn hand_on(mut self, closed: tokio::sync::mpsc::Sender<PathBuf>) -> PartitionedSink {
        self.closed = Some(closed);
        self
    }

    /// Adds a record and its plays. Records must come in day order.
    pub fn push(&mut self, record: &StoredMatch, plays: &[PlayRow]) -> Result<(), SinkError> {
        let day = record.ended_at.date_naive();
        if self.day != Some(day) {
            self.close_day()?;
            self.day = Some(day);
        }
        self.matches.push(record, plays);
        self.players.push(record);
        self.rounds.push(record);
        self.plays.push(record, plays);
        self.flush(false)
    }

    /// Rows written so far per table, in [`TABLES`] order.
    pub fn rows(&self) -> [u64; 4] {
        self.rows
    }

    fn flush(&mut self, all: bool) -> Result<(), SinkError> {
        for (index, table) in TABLES.into_iter().enumerate() {
            let pending = match table {
                Table::Matches => self.matches.len(),
                Table::MatchPlayers => self.players.len(),
                Table::Rounds => self.rounds.len(),
                Table::Plays => self.plays.len(),
            };
            if pending == 0 || (!all && pending < BATCH_ROWS) {
                continue;
            }
            let batch = match table {
                Table::Matches => self.matches.finish(),
                Table::MatchPlayers => self.players.finish(),
                Table::Rounds => self.rounds.finish(),
                Table::Plays => self.plays.finish(),
            };
            if self.files[index].is_none() {
                self.files[index] = Some(self.open(table)?);
            }
            let file = self.files[index].as_mut().expect("opened above");
            let rows = batch.num_rows() as u64;
            file.encoder.write(batch)?;
            file.rows += rows;
            self.rows[index] += rows;
        }
        Ok(())
    }

    fn open(&self, table: Table) -> Result<OpenFile, SinkError> {
        let day = self.day.expect("a day is open when rows are written");
        let dir = self
            .root
            .join(table.name())
            .join(format!("date={}", day.format("%Y-%m-%d")));
        fs::create_dir_all(&dir)?;
        let name = format!("part-{}.parquet", self.run);
        let path = dir.join(&name);
        let temp = dir.join(format!(".{name}.tmp"));
        let writer = ArrowWriter::try_new(
            File::create(&temp)?,
            table.schema(),
            Some(writer_properties(table)),
        )?;
        Ok(OpenFile {
            encoder: Encoder::start(writer)?,
            temp,
            path,
            rows: 0,
        })
    }

    fn close_day(&mut self) -> Result<(), SinkError> {
        self.flush(true)?;
        for slot in &mut self.files {
            if let Some(mut file) = slot.take() {
                file.encoder.finish()?;
                fs::rename(&file.temp, &file.path)?;
                debug_assert!(file.rows > 0);
                if let Some(closed) = &self.closed {
                    closed
                        .blocking_send(file.path.clone())
                        .map_err(|_| SinkError::from("the upload of the finished files stopped"))?;
                }
                self.written.push(file.path);
            }
        }
        Ok(())
    }

    /// Writes what is left and closes every file; returns the files written and the rows
    /// per table.
    pub fn finish(mut self) -> Result<(Vec<PathBuf>, [u64; 4]), SinkError> {
        self.close_day()?;
        Ok((self.written, self.rows))
    }

    /// Removes every file of this run, finished or not (after an error), so that a run
    /// that failed leaves nothing behind and the next one exports the same records again.
    pub fn abandon(mut self) {
        for mut file in self.files.iter_mut().filter_map(Option::take) {
            let _ = file.encoder.finish();
            let _ = fs::remove_file(&file.temp);
        }
        for path in &self.written {
            let _ = fs::remove_file(path);
        }
    }
}
