//! The `h5chunk` command-line tool: list a file's tree, inspect a dataset's chunk index, dump
//! values, import values into a new dataset, and check every structure of a file.
//!
//! Errors are one line on stderr (`h5chunk: error: ...`) and a non-zero exit status; `check`
//! exits with status 1 when it finds a problem.

mod cat;
mod npy;
mod progress;
mod repack;
mod text;
mod view;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use h5chunk::index::AllocTime;
use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::types::{TypeClass, TypeDesc};
use h5chunk::{
    BitshuffleCompression, BloscCodec, BloscShuffle, CreateMode, Dataset, File, FileOptions,
    FilterSpec, Group, IndexKind, MemberKind, StorageKind,
};

use crate::progress::Progress;

/// Look inside HDF5 files' chunked datasets, and write new ones.
#[derive(Debug, Parser)]
#[command(name = "h5chunk", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the tree: one group or dataset per line, datasets with their type, shape, maximum
    /// shape (`inf`: unlimited), chunk shape, chunk index and filters.
    Ls {
        /// The HDF5 file.
        file: PathBuf,
        /// The group to list (default: the root group).
        group: Option<String>,
        /// Also list each object's attributes, one per line under it: `@name type = value`
        /// (long values shortened).
        #[arg(short = 'a', long)]
        attrs: bool,
        /// After the listing, print to stderr the requests the listing made and their bytes
        /// (and, for a URL, the GET and HEAD requests and bytes fetched).
        #[arg(long)]
        stats: bool,
    },
    /// Print the attributes of a group or dataset: name, type, shape and value, one per line.
    Attrs {
        /// The HDF5 file.
        file: PathBuf,
        /// The group's or dataset's path (default: the root group).
        path: Option<String>,
    },
    /// Show a dataset's layout and chunk index: kind, layout version, allocated chunks, index
    /// depth or levels, blocks or nodes by type, and index metadata bytes.
    Inspect {
        /// The HDF5 file.
        file: PathBuf,
        /// The dataset's path.
        dataset: String,
    },
    /// Write a dataset's values (or a hyperslab of them) to stdout: as text on a terminal,
    /// else in C order, little-endian, with the width and kind of the dataset's type.
    Cat {
        /// The HDF5 file.
        file: PathBuf,
        /// The dataset's path.
        dataset: String,
        /// Write a `.npy` file (header and values) instead of bare values.
        #[arg(long, conflicts_with_all = ["text", "csv"])]
        npy: bool,
        /// Print values as text (the default when stdout is a terminal): one value a line
        /// for 1-D data, rows as lines, each 2-D block of n-D data under its `[i, :, :]`
        /// header, strings quoted, compound datasets as a table of their fields.
        #[arg(long, conflicts_with = "csv")]
        text: bool,
        /// Print values as CSV: rows of the last dimension as lines (a compound dataset's
        /// fields as columns, under a header of their names).
        #[arg(long)]
        csv: bool,
        /// Only this hyperslab: `START:STOP[:STEP]` or an index per dimension, comma-
        /// separated, as Python slices (`0:10,::2,-1`); dimensions left out are whole. An
        /// index drops its dimension from the output's shape, as numpy does.
        #[arg(long, value_name = "START:STOP[:STEP],...", allow_hyphen_values = true)]
        slice: Option<String>,
    },
    /// Create a chunked dataset (and the file, if needed) from little-endian C-order values or
    /// a `.npy` file.
    Import(ImportArgs),
    /// Walk every structure reachable from the superblock, verify every checksum and index
    /// invariant, decode every chunk, and print each problem with its address. Exit status
    /// 0: verified clean; 1: problems found (or the file does not open); 2: no problem found,
    /// but some objects could not be verified (unsupported structures, listed as `skipped:`).
    Check {
        /// The HDF5 file.
        file: PathBuf,
    },
    /// Roll a file back to its last completed flush if a flush was interrupted (a crash, a
    /// kill, a power cut) and left its journal, `FILE.h5chunk-journal`, beside it; opening
    /// the file for writing does the same. Nothing to do otherwise.
    Recover {
        /// The HDF5 file.
        file: PathBuf,
    },
    /// Rewrite a file object by object: groups, attributes, datasets (chunks copied as stored,
    /// with their filters, chunk index kind, chunk shape, fill value and maximum shape) and
    /// external links. What cannot be copied yet (soft links, committed datatypes, a second
    /// hard link to an object, compact, virtual or external-file datasets, references and
    /// variable-length data other than strings) is refused naming the object; OUT is then not
    /// written.
    Repack {
        /// The file to read.
        input: PathBuf,
        /// The file to write (replaced if it exists).
        output: PathBuf,
        /// Write a paged file (libhdf5's paged aggregation) of pages of this size: bytes, or
        /// with a KiB, MiB or GiB suffix (4096, 64KiB, 8MiB).
        #[arg(long, value_name = "SIZE", value_parser = repack::parse_size)]
        paged: Option<u64>,
        /// With --paged: put the superblock, object headers, group structures and chunk
        /// indexes in the first pages and the raw data after (its size measured by a dry run
        /// in memory).
        #[arg(long)]
        metadata_first: bool,
    },
    /// Write kerchunk references to the file's datasets (version 1 JSON, or kerchunk's Parquet
    /// layout with `--parquet`): Zarr metadata and one `[url, offset, size]` per allocated
    /// chunk, so that fsspec's reference file system with zarr, xarray or dask reads the file
    /// without libhdf5.
    Refs {
        /// The HDF5 file.
        file: PathBuf,
        /// The datasets to describe (default: every dataset of the file).
        datasets: Vec<String>,
        /// Where to write the references (default: stdout).
        #[arg(short = 'o', long, value_name = "PATH", conflicts_with = "parquet")]
        output: Option<PathBuf>,
        /// Write kerchunk's Parquet layout into this directory instead (a `.zmetadata` and
        /// one `refs.N.parq` per record of each array): for files of many chunks.
        #[arg(long, value_name = "DIR")]
        parquet: Option<PathBuf>,
        /// References per Parquet file, with `--parquet`.
        #[arg(long, value_name = "N", default_value_t = h5chunk_refs::DEFAULT_RECORD_SIZE, requires = "parquet")]
        record_size: usize,
        /// The URL the references give for the file's bytes (default: the file's absolute
        /// path); e.g. `s3://bucket/key` for a copy kept in object storage.
        #[arg(long)]
        url: Option<String>,
        /// Leave out the datasets Zarr cannot describe (printed to stderr) instead of failing.
        #[arg(long)]
        skip_unsupported: bool,
    },
    /// Serve a page that shows the file in the browser (a tree with keyboard navigation,
    /// attributes, dataset metadata, a line plot of 1-D data, an image of 2-D slices of n-D
    /// data, statistics) and follows a SWMR writer; prints its address. The page is served on
    /// 127.0.0.1 only, works offline, and stops with Ctrl-C.
    View {
        /// The HDF5 file (or an `s3://` URL).
        file: PathBuf,
        /// The port (default: a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Stop serving after this many seconds (default: until Ctrl-C).
        #[arg(long, value_name = "SECONDS")]
        exit_after: Option<u64>,
    },
    /// Clear the superblock's file consistency flags of a file a crashed writer left marked
    /// open for writing (libhdf5 and h5chunk refuse such a file), as `h5clear -s` does. Only
    /// when no process has the file open.
    Clear {
        /// The HDF5 file.
        file: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
struct ImportArgs {
    /// The HDF5 file (created if it does not exist).
    file: PathBuf,
    /// The new dataset's path (missing parent groups are created).
    dataset: String,
    /// Element type: i1 u1 i2 u2 i4 u4 i8 u8 f4 f8; a `>` prefix stores it big-endian (the
    /// input is little-endian regardless). Taken from a `.npy` input if omitted.
    #[arg(long, allow_hyphen_values = true)]
    dtype: Option<String>,
    /// Dimensions, comma-separated (taken from a `.npy` input if omitted).
    #[arg(long)]
    shape: Option<String>,
    /// Chunk dimensions, comma-separated.
    #[arg(long)]
    chunks: String,
    /// Maximum dimensions, comma-separated; `inf` for an unlimited one (default: the shape).
    #[arg(long)]
    maxshape: Option<String>,
    /// Library version bounds of a new file, as h5py's `libver` (default: earliest). Refused
    /// for an existing file, whose new datasets follow the file's own superblock.
    #[arg(long, value_enum)]
    libver: Option<LibverArg>,
    /// gzip compression at level N (0-9).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=9))]
    deflate: Option<u32>,
    /// Byte shuffle before compression.
    #[arg(long)]
    shuffle: bool,
    /// Fletcher32 checksum of each chunk.
    #[arg(long)]
    fletcher32: bool,
    /// LZF compression (h5py's filter 32000).
    #[arg(long)]
    lzf: bool,
    /// LZ4 compression (filter 32004, hdf5plugin's `LZ4`), in blocks of N bytes (default: the
    /// filter's, 1 GiB).
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "0")]
    lz4: Option<u32>,
    /// Bitshuffle (filter 32008, hdf5plugin's `Bitshuffle`) with this block compression.
    #[arg(long, value_enum, value_name = "COMPRESSION")]
    bitshuffle: Option<BitshuffleArg>,
    /// Bitshuffle's block size in elements, a multiple of 8 (default: the filter's choice).
    #[arg(long, value_name = "N", requires = "bitshuffle", default_value_t = 0)]
    bitshuffle_block: u32,
    /// Zstandard compression (filter 32015) at level N; also the level of `--bitshuffle zstd`
    /// (every level encodes at the pure-Rust encoder's fastest setting).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    zstd: Option<i32>,
    /// bzip2 compression (filter 307, PyTables' and hdf5plugin's) with blocks of N × 100 kB.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=9))]
    bzip2: Option<u32>,
    /// Blosc compression (filter 32001, hdf5plugin's `Blosc`) with this codec.
    #[arg(long, value_enum, value_name = "CODEC")]
    blosc: Option<BloscCodecArg>,
    /// Blosc2 compression (filter 32026, hdf5plugin's `Blosc2`) with this codec.
    #[arg(long, value_enum, value_name = "CODEC")]
    blosc2: Option<BloscCodecArg>,
    /// The level of `--blosc` or `--blosc2` (0-9).
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u8).range(0..=9))]
    blosc_level: u8,
    /// The shuffle of `--blosc` or `--blosc2`.
    #[arg(long, value_enum, value_name = "SHUFFLE", default_value = "byte")]
    blosc_shuffle: BloscShuffleArg,
    /// LZO compression (filter 305, PyTables').
    #[arg(long)]
    lzo: bool,
    /// szip compression (filter 4, libhdf5's): `nn` with the nearest-neighbour predictor, `ec`
    /// entropy coding only.
    #[arg(long, value_enum, value_name = "METHOD")]
    szip: Option<SzipArg>,
    /// szip's pixels per block (an even number, 2-32).
    #[arg(long, value_name = "N", requires = "szip", default_value_t = 8)]
    szip_block: u32,
    /// Fill value of unwritten elements.
    #[arg(long, value_name = "V", allow_hyphen_values = true)]
    fill: Option<String>,
    /// Space allocation time (default: incremental, each chunk when first written).
    #[arg(long, value_enum)]
    alloc: Option<AllocArg>,
    /// Chunk index, instead of libhdf5's choice.
    #[arg(long, value_enum)]
    index: Option<IndexArg>,
    /// The values: raw little-endian C-order, or a `.npy` file (default: stdin).
    #[arg(long, value_name = "PATH")]
    input: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LibverArg {
    Earliest,
    V108,
    V110,
    V112,
    V114,
    V200,
    Latest,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BitshuffleArg {
    /// The bit transpose alone.
    None,
    /// LZ4 blocks (what detectors write).
    Lz4,
    /// Zstandard frames, at `--zstd`'s level (default 3).
    Zstd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BloscCodecArg {
    Blosclz,
    Lz4,
    Lz4hc,
    Zlib,
    Zstd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BloscShuffleArg {
    /// None.
    None,
    /// Byte shuffle.
    Byte,
    /// Bit shuffle.
    Bit,
    /// Blosc2's delta filter (not Blosc's).
    Delta,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SzipArg {
    /// The nearest-neighbour predictor, then entropy coding.
    Nn,
    /// Entropy coding alone.
    Ec,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum AllocArg {
    Early,
    Late,
    Incremental,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum IndexArg {
    Btree1,
    Btree2,
    Earray,
    Farray,
    Single,
    Implicit,
    Skiplist,
}

/// A command's failure: one line for stderr.
type CliResult<T> = Result<T, String>;

/// What a command asks the process to exit with.
enum Outcome {
    Ok,
    /// `check` found problems.
    Problems,
    /// `check` found none, but could not verify everything (unsupported structures).
    Unverified,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Ls {
            file,
            group,
            attrs,
            stats,
        } => ls(&file, group.as_deref(), attrs, stats),
        Command::Attrs { file, path } => attrs(&file, path.as_deref().unwrap_or("/")),
        Command::Inspect { file, dataset } => inspect(&file, &dataset),
        Command::Cat {
            file,
            dataset,
            npy,
            text,
            csv,
            slice,
        } => cat::cat(
            &file,
            &dataset,
            cat::Format::choose(npy, text, csv),
            slice.as_deref(),
        ),
        Command::Import(args) => import(&args),
        Command::Check { file } => check(&file),
        Command::Recover { file } => recover(&file),
        Command::Clear { file } => clear(&file),
        Command::View {
            file,
            port,
            exit_after,
        } => view::view(&file, port, exit_after),
        Command::Repack {
            input,
            output,
            paged,
            metadata_first,
        } => repack::repack(&input, &output, paged, metadata_first).map(|()| Outcome::Ok),
        Command::Refs {
            file,
            datasets,
            output,
            parquet,
            record_size,
            url,
            skip_unsupported,
        } => refs(
            &file,
            datasets,
            output.as_deref(),
            parquet.as_deref().map(|dir| (dir, record_size)),
            url,
            skip_unsupported,
        ),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Problems) => ExitCode::FAILURE,
        Ok(Outcome::Unverified) => ExitCode::from(2),
        Err(e) => {
            // One line, whatever the error's text holds.
            eprintln!("h5chunk: error: {}", e.replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

/// Open a path, or a URL of a file in object storage (`s3://bucket/key`: endpoint and
/// credentials from the `AWS_*` environment variables).
fn open(file: &Path) -> CliResult<File> {
    open_file(file).map_err(|e| e.to_string())
}

fn open_file(file: &Path) -> h5chunk::Result<File> {
    match file.to_str() {
        Some(url) if url.contains("://") => File::open_url(url),
        _ => File::open(file),
    }
}

fn in_file<T>(file: &Path, r: h5chunk::Result<T>) -> CliResult<T> {
    r.map_err(|e| format!("{}: {e}", file.display()))
}

/// `(3, 4)`, with `inf` for unlimited dimensions.
fn dims_text(dims: impl IntoIterator<Item = Option<u64>>) -> String {
    let parts: Vec<String> = dims
        .into_iter()
        .map(|d| d.map_or("inf".to_owned(), |d| d.to_string()))
        .collect();
    match parts.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", parts.join(", ")),
    }
}

/// `<i4`: the type numpy would name (`|u1` for one-byte types).
/// numpy's name for the element type (a compound as its field list).
fn type_text(d: &Dataset) -> String {
    match d.dtype().class {
        TypeClass::Other => h5chunk::types::numpy_descr(d.datatype())
            .unwrap_or_else(|| d.datatype().class.name().to_owned()),
        // numpy has no bfloat16: ml_dtypes' name for it.
        TypeClass::BFloat16 => "bfloat16".to_owned(),
        _ => d.dtype().numpy(),
    }
}

fn dataset_line(d: &Dataset) -> h5chunk::Result<String> {
    // A null dataspace (h5py.Empty) has no shape: h5py says None.
    let mut line = if d.is_null() {
        format!("{} {} shape=null", d.path(), type_text(d))
    } else {
        format!(
            "{} {} shape={} max={}",
            d.path(),
            type_text(d),
            dims_text(d.shape().into_iter().map(Some)),
            dims_text(d.max_shape()),
        )
    };
    match (d.storage_kind(), d.chunk(), d.index_kind()) {
        (StorageKind::Chunked, Some(chunk), Some(kind)) => {
            line.push_str(&format!(
                " chunks={} index={}",
                dims_text(chunk.into_iter().map(Some)),
                kind.name()
            ));
        }
        (StorageKind::Compact, ..) => line.push_str(" layout=compact"),
        (StorageKind::Virtual, ..) => line.push_str(" layout=virtual"),
        _ if d.external_files().is_some() => line.push_str(&format!(
            " layout=external({} files)",
            d.external_files().map_or(0, |e| e.len())
        )),
        _ => line.push_str(" layout=contiguous"),
    }
    let filters = d.filters()?;
    if filters.is_empty() {
        line.push_str(" filters=none");
    } else {
        let names: Vec<String> = filters.iter().map(ToString::to_string).collect();
        line.push_str(&format!(" filters={}", names.join(",")));
    }
    Ok(line)
}

fn ls(file: &Path, group: Option<&str>, with_attrs: bool, stats: bool) -> CliResult<Outcome> {
    let f = open(file)?;
    let g = in_file(file, f.group(group.unwrap_or("/")))?;
    let mut out = std::io::stdout().lock();
    let mut lines = Vec::new();
    let path = g.path().to_owned();
    lines.push(if path == "/" {
        path
    } else {
        format!("{path}/")
    });
    // Remote files: every level of the tree's structures in one request set, not a group's
    // at a time as the depth-first walk below reaches them.
    g.prefetch_tree();
    let mut seen = std::collections::HashSet::from([g.object_address()]);
    let mut failed = 0u64;
    if with_attrs {
        failed = attr_lines(g.attrs().all(), &mut lines);
    }
    failed = failed.saturating_add(walk(&g, &mut lines, &mut seen, with_attrs));
    for l in lines {
        if writeln!(out, "{l}").is_err() {
            break;
        }
    }
    if stats {
        eprintln!("{}", io_line(&f.io_stats()));
    }
    if failed > 0 {
        // The listing is complete otherwise; the exit status says it is not whole.
        return Err(format!(
            "{}: {failed} member(s) could not be listed (reasons in the listing)",
            file.display()
        ));
    }
    Ok(Outcome::Ok)
}

/// `ls --stats`'s line: the requests a file handle made, and what a remote storage fetched.
fn io_line(s: &h5chunk::IoStats) -> String {
    let mut line = format!(
        "io: {} reads, {} bytes read, {} writes, {} bytes written",
        s.reads, s.bytes_read, s.writes, s.bytes_written
    );
    if let Some(r) = s.remote {
        line.push_str(&format!(
            "; remote: {} GET, {} HEAD, {} bytes fetched",
            r.requests, r.heads, r.bytes
        ));
    }
    line
}

/// Members of `g`, depth-first, sorted by name. A member that cannot be opened is listed with
/// the reason instead of stopping the listing; the count of those whose reason is an error
/// (not a structure h5chunk does not support yet) is returned, for the exit status. A group
/// reached again through another hard link (`seen` holds the object addresses listed so far)
/// is named but not listed again, so a group that contains its own ancestor ends the walk
/// instead of recursing forever.
fn walk(
    g: &Group,
    lines: &mut Vec<String>,
    seen: &mut std::collections::HashSet<u64>,
    with_attrs: bool,
) -> u64 {
    let failure = |e: &h5chunk::Error| u64::from(!e.is_unsupported());
    let mut failed = 0u64;
    let child = |name: &str| repack::join(g.path(), name);
    // As h5py lists them: in creation order where the group tracks it, else by name.
    let members = match g.members_in_creation_order() {
        Ok(m) => m,
        Err(e) => {
            let path = g.path().trim_end_matches('/');
            lines.push(format!("{path}/ (members not listed: {e})"));
            return failure(&e);
        }
    };
    for (name, kind) in members {
        let path = child(&name);
        match kind {
            MemberKind::Group => match g.group(&name) {
                Ok(sub) if !seen.insert(sub.object_address()) => {
                    lines.push(format!("{path}/ (a hard link to a group listed already)"));
                }
                Ok(sub) => {
                    lines.push(format!("{path}/"));
                    if with_attrs {
                        failed = failed.saturating_add(attr_lines(sub.attrs().all(), lines));
                    }
                    failed = failed.saturating_add(walk(&sub, lines, seen, with_attrs));
                }
                Err(e) => {
                    lines.push(format!("{path}/ (cannot open: {e})"));
                    failed = failed.saturating_add(failure(&e));
                }
            },
            MemberKind::Dataset => {
                match g.dataset(&name).and_then(|d| Ok((dataset_line(&d)?, d))) {
                    Ok((l, d)) => {
                        lines.push(l);
                        if with_attrs {
                            failed = failed.saturating_add(attr_lines(d.attrs().all(), lines));
                        }
                    }
                    Err(e) => {
                        lines.push(format!("{path} (cannot open: {e})"));
                        failed = failed.saturating_add(failure(&e));
                    }
                }
            }
            _ => match g.link(&name) {
                // Where a link to another file or path points, not followed (a listing
                // that opened every file the links name could be long, or loop).
                Ok(Some(h5chunk::LinkValue::External { file, path: target })) => {
                    lines.push(format!("{path} -> {file}:{target}"));
                }
                Ok(Some(h5chunk::LinkValue::Soft(target))) => {
                    lines.push(format!("{path} -> {target}"));
                }
                Ok(_) => lines.push(format!("{path} (other object)")),
                Err(e) => {
                    lines.push(format!("{path} (cannot open: {e})"));
                    failed = failed.saturating_add(failure(&e));
                }
            },
        }
    }
    failed
}

/// One line per attribute, indented under its object: `  @name type = value`; the count of
/// failures (not unsupported structures) for the exit status.
fn attr_lines(attrs: h5chunk::Result<Vec<h5chunk::Attr>>, lines: &mut Vec<String>) -> u64 {
    match attrs {
        Ok(all) => {
            for a in all {
                lines.push(format!(
                    "  @{} {} = {}",
                    a.name(),
                    a.type_name(),
                    a.summary()
                ));
            }
            0
        }
        Err(e) => {
            lines.push(format!("  (attributes not listed: {e})"));
            u64::from(!e.is_unsupported())
        }
    }
}

fn attr_shape(a: &h5chunk::Attr) -> String {
    match a.shape() {
        None => "empty".to_owned(),
        Some([]) => "scalar".to_owned(),
        Some(s) => dims_text(s.iter().copied().map(Some)),
    }
}

fn attrs(file: &Path, path: &str) -> CliResult<Outcome> {
    let f = open(file)?;
    let all = match f.group(path) {
        Ok(g) => g.attrs().all(),
        Err(h5chunk::Error::WrongKind { .. }) => in_file(file, f.dataset(path))?.attrs().all(),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let mut out = std::io::stdout().lock();
    for a in in_file(file, all)? {
        if writeln!(
            out,
            "{} {} {} = {}",
            a.name(),
            a.type_name(),
            attr_shape(&a),
            a.summary()
        )
        .is_err()
        {
            break;
        }
    }
    Ok(Outcome::Ok)
}

fn refs(
    file: &Path,
    datasets: Vec<String>,
    output: Option<&Path>,
    parquet: Option<(&Path, usize)>,
    url: Option<String>,
    skip_unsupported: bool,
) -> CliResult<Outcome> {
    let f = open(file)?;
    let url = match url {
        Some(u) => u,
        // An object-store URL names itself.
        None if file.to_str().is_some_and(|f| f.contains("://")) => {
            file.to_string_lossy().into_owned()
        }
        None => std::path::absolute(file)
            .map_err(|e| format!("{}: {e}", file.display()))?
            .to_string_lossy()
            .into_owned(),
    };
    let options = h5chunk_refs::RefsOptions {
        datasets,
        skip_unsupported,
    };
    let refs = h5chunk_refs::references(&f, &url, &options)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    for (path, why) in &refs.skipped {
        eprintln!("h5chunk: skipped {path}: {why}");
    }
    if let Some((dir, record_size)) = parquet {
        refs.write_parquet(dir, record_size)
            .map_err(|e| e.to_string())?;
        return Ok(Outcome::Ok);
    }
    match output {
        Some(out) => {
            let mut w = std::fs::File::create(out)
                .and_then(|mut f| refs.write_json(&mut f).map(|()| f))
                .map_err(|e| format!("{}: {e}", out.display()))?;
            w.flush().map_err(|e| format!("{}: {e}", out.display()))?;
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            refs.write_json(&mut stdout)
                .and_then(|()| stdout.write_all(b"\n"))
                .map_err(|e| format!("stdout: {e}"))?;
        }
    }
    Ok(Outcome::Ok)
}

fn inspect(file: &Path, path: &str) -> CliResult<Outcome> {
    let f = open(file)?;
    let d = f.dataset(path).map_err(|e| in_dataset(file, path, &e))?;
    let mut lines = vec![
        format!("dataset: {}", d.path()),
        format!("type: {}", type_text(&d)),
        format!("shape: {}", dims_text(d.shape().into_iter().map(Some))),
        format!("max shape: {}", dims_text(d.max_shape())),
    ];
    let filters = d.filters().map_err(|e| in_dataset(file, path, &e))?;
    let names: Vec<String> = filters.iter().map(ToString::to_string).collect();
    let report = d.inspect().map_err(|e| in_dataset(file, path, &e))?;
    match (report, d.chunk()) {
        (Some(r), Some(chunk)) => {
            lines.push("layout: chunked".into());
            lines.push(format!(
                "chunk shape: {}",
                dims_text(chunk.into_iter().map(Some))
            ));
            lines.push(format!(
                "filters: {}",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(",")
                }
            ));
            lines.push(format!("layout version: {}", r.layout_version));
            lines.push(format!("index: {}", r.kind.name()));
            let grid: u64 = r.grid.iter().product();
            lines.push(format!(
                "allocated chunks: {} (of {grid} in the current grid {})",
                r.chunks,
                dims_text(r.grid.iter().map(|&g| Some(g)))
            ));
            let depth_name = match r.kind {
                IndexKind::BTree1 | IndexKind::BTree2 => "index depth",
                _ => "index levels",
            };
            lines.push(match r.depth {
                Some(n) => format!("{depth_name}: {n}"),
                None => format!("{depth_name}: 0 (no index structure)"),
            });
            let blocks: Vec<String> = r
                .blocks_by_type
                .iter()
                .map(|(t, n)| format!("{t}={n}"))
                .collect();
            lines.push(format!(
                "index blocks: {}",
                if blocks.is_empty() {
                    "none".to_owned()
                } else {
                    blocks.join(" ")
                }
            ));
            lines.push(format!("index metadata bytes: {}", r.metadata_bytes));
            lines.push(match r.metadata_bytes_per_chunk() {
                Some(b) => format!("index bytes per allocated chunk: {b:.1}"),
                None => "index bytes per allocated chunk: - (no chunk allocated)".into(),
            });
            lines.push(format!("stored chunk bytes: {}", r.stored_bytes));
        }
        _ => {
            lines.push(format!("layout: {} (no chunk index)", d.layout_name()));
            for e in d.external_files().unwrap_or_default() {
                lines.push(format!(
                    "external file: {} at {} ({})",
                    e.path.display(),
                    e.offset,
                    e.size
                        .map_or("unlimited".to_owned(), |n| format!("{n} bytes"))
                ));
            }
            for (i, m) in d.virtual_mappings().unwrap_or_default().iter().enumerate() {
                lines.push(format!(
                    "mapping {i}: {}:{} {} -> {}",
                    m.source_file,
                    m.source_dataset,
                    selection_text(&m.source),
                    selection_text(&m.target)
                ));
            }
        }
    }
    // The attributes, as `attrs` prints them (unreadable ones say why).
    match d.attrs().all() {
        Ok(all) if all.is_empty() => lines.push("attributes: none".into()),
        Ok(all) => {
            lines.push(format!("attributes: {}", all.len()));
            for a in all {
                lines.push(format!(
                    "  {} {} {} = {}",
                    a.name(),
                    a.type_name(),
                    attr_shape(&a),
                    a.summary()
                ));
            }
        }
        Err(e) => lines.push(format!("attributes: not read ({e})")),
    }
    let mut out = std::io::stdout().lock();
    for l in lines {
        if writeln!(out, "{l}").is_err() {
            break;
        }
    }
    Ok(Outcome::Ok)
}

/// Bytes a slab of `cat` or `import` aims at: memory stays at a few slabs plus the caches,
/// whatever the dataset's size.
const SLAB_BYTES: usize = 16 << 20;

/// A virtual dataset mapping's selection, short: `all`, a regular hyperslab's start, stride,
/// count and block (`inf`: unlimited), or how many blocks.
fn selection_text(s: &h5chunk::VirtualSelection) -> String {
    use h5chunk::VirtualSelection as S;
    let list = |v: &[u64]| {
        v.iter()
            .map(|&x| {
                if x == S::UNLIMITED {
                    "inf".to_owned()
                } else {
                    x.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    match s {
        S::All => "all".into(),
        S::Regular {
            start,
            stride,
            count,
            block,
        } => format!(
            "start=({}) stride=({}) count=({}) block=({})",
            list(start),
            list(stride),
            list(count),
            list(block)
        ),
        S::Blocks(b) => format!("{} blocks", b.len()),
    }
}

/// An error about the dataset at `path` of `file`: the file, then the dataset, then what
/// went wrong (a message's address in the error stays, after the dataset it belongs to).
fn in_dataset(file: &Path, path: &str, e: &h5chunk::Error) -> String {
    let text = e.to_string();
    // Said once: an error that names the dataset after a message's address names it first.
    let text = text.replacen(&format!(": {path}: "), ": ", 1);
    format!("{}: {path}: {text}", file.display())
}

fn parse_dims(what: &str, text: &str) -> CliResult<Vec<Option<u64>>> {
    text.split(',')
        .map(|s| match s.trim() {
            "inf" | "None" | "none" => Ok(None),
            t => t
                .parse::<u64>()
                .map(Some)
                .map_err(|_| format!("--{what} {text:?}: {t:?} is not a dimension")),
        })
        .collect()
}

fn parse_fixed(what: &str, text: &str) -> CliResult<Vec<u64>> {
    parse_dims(what, text)?
        .into_iter()
        .map(|d| d.ok_or_else(|| format!("--{what} {text:?}: only --maxshape takes inf")))
        .collect()
}

fn parse_dtype(text: &str) -> CliResult<TypeDesc> {
    let bare = text.trim_start_matches(['<', '>', '|', '=']);
    if !matches!(
        bare,
        "i1" | "u1" | "i2" | "u2" | "i4" | "u4" | "i8" | "u8" | "f4" | "f8"
    ) {
        return Err(format!(
            "--dtype {text:?}: expected one of i1 u1 i2 u2 i4 u4 i8 u8 f4 f8, optionally with > \
             for big-endian storage"
        ));
    }
    TypeDesc::from_numpy(text).map_err(|e| format!("--dtype {text:?}: {e}"))
}

/// One element of `dtype` from text, as little-endian bytes.
fn parse_value(dtype: TypeDesc, text: &str) -> CliResult<Vec<u8>> {
    let bad = || format!("--fill {text:?} is not a {} value", dtype.numpy());
    let n = dtype.size;
    let bytes = match dtype.class {
        TypeClass::Float if n == 4 => text
            .parse::<f32>()
            .map_err(|_| bad())?
            .to_le_bytes()
            .to_vec(),
        TypeClass::Float => text
            .parse::<f64>()
            .map_err(|_| bad())?
            .to_le_bytes()
            .to_vec(),
        TypeClass::BFloat16 => h5chunk::bf16::from_f64(text.parse::<f64>().map_err(|_| bad())?)
            .to_le_bytes()
            .to_vec(),
        TypeClass::Int | TypeClass::Uint => {
            // i128 holds every i64 and u64; the range check is the element type's.
            let v = text.parse::<i128>().map_err(|_| bad())?;
            let fits = match (dtype.class == TypeClass::Int, n) {
                (true, 1) => i8::try_from(v).is_ok(),
                (true, 2) => i16::try_from(v).is_ok(),
                (true, 4) => i32::try_from(v).is_ok(),
                (true, 8) => i64::try_from(v).is_ok(),
                (false, 1) => u8::try_from(v).is_ok(),
                (false, 2) => u16::try_from(v).is_ok(),
                (false, 4) => u32::try_from(v).is_ok(),
                (false, 8) => u64::try_from(v).is_ok(),
                // `TypeDesc::from_numpy` allows no other integer size.
                _ => false,
            };
            if !fits {
                return Err(bad());
            }
            // Two's complement: the low `n` bytes are the value in the element's width.
            v.to_le_bytes().get(..n).ok_or_else(bad)?.to_vec()
        }
        TypeClass::FixedString | TypeClass::VarLenString | TypeClass::Other => {
            return Err(bad());
        }
    };
    Ok(bytes)
}

fn libver(v: LibverArg) -> Libver {
    match v {
        LibverArg::Earliest => Libver::Earliest,
        LibverArg::V108 => Libver::V18,
        LibverArg::V110 => Libver::V110,
        LibverArg::V112 => Libver::V112,
        LibverArg::V114 => Libver::V114,
        LibverArg::V200 => Libver::V200,
        LibverArg::Latest => Libver::Latest,
    }
}

fn index_kind(i: IndexArg) -> IndexKind {
    match i {
        IndexArg::Btree1 => IndexKind::BTree1,
        IndexArg::Btree2 => IndexKind::BTree2,
        IndexArg::Earray => IndexKind::ExtensibleArray,
        IndexArg::Farray => IndexKind::FixedArray,
        IndexArg::Single => IndexKind::Single,
        IndexArg::Implicit => IndexKind::Implicit,
        IndexArg::Skiplist => IndexKind::SkipList,
    }
}

/// The input, positioned at its first value, with the type and shape a `.npy` header gives
/// and the values' length when it is known (a file) before they are read.
struct Input {
    reader: Box<dyn Read>,
    npy: Option<(TypeDesc, Vec<u64>)>,
    len: Option<u64>,
    what: String,
}

fn open_input(path: Option<&Path>) -> CliResult<Input> {
    let (raw, len, what): (Box<dyn Read>, Option<u64>, String) = match path {
        Some(p) => {
            let f = std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let len = f.metadata().map(|m| m.len()).ok();
            (Box::new(f), len, p.display().to_string())
        }
        None => (Box::new(std::io::stdin()), None, "stdin".to_owned()),
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 20, raw);
    let head = std::io::BufRead::fill_buf(&mut reader)
        .map_err(|e| format!("{what}: {e}"))?
        .get(..npy::MAGIC.len())
        .map(<[u8]>::to_vec);
    if head.as_deref() != Some(&npy::MAGIC[..]) {
        return Ok(Input {
            reader: Box::new(reader),
            npy: None,
            len,
            what,
        });
    }
    let mut magic = [0u8; 6];
    reader
        .read_exact(&mut magic)
        .map_err(|e| format!("{what}: {e}"))?;
    let (descr, shape, header) =
        npy::read_header(&mut reader).map_err(|e| format!("{what}: {e}"))?;
    let dtype = TypeDesc::from_numpy(&descr).map_err(|e| format!("{what}: {e}"))?;
    // What is left of a file after its header: the values.
    let len = len.map(|total| {
        total
            .saturating_sub(magic.len() as u64)
            .saturating_sub(header)
    });
    Ok(Input {
        reader: Box::new(reader),
        npy: Some((dtype, shape)),
        len,
        what,
    })
}

/// Create the groups on the way to `path` that do not exist yet.
fn make_parents(f: &File, path: &str) -> CliResult<()> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let mut at = String::new();
    for name in parts.iter().take(parts.len().saturating_sub(1)) {
        at.push('/');
        at.push_str(name);
        if f.group(&at).is_err() {
            f.create_group(&at)
                .map_err(|e| format!("creating group {at}: {e}"))?;
        }
    }
    Ok(())
}

fn import(a: &ImportArgs) -> CliResult<Outcome> {
    let mut input = open_input(a.input.as_deref())?;
    let dtype = match (&a.dtype, &input.npy) {
        (Some(t), Some((n, _))) => {
            let t = parse_dtype(t)?;
            if (t.class, t.size) != (n.class, n.size) {
                return Err(format!(
                    "--dtype {} does not match the .npy input's {}",
                    t.numpy(),
                    n.numpy()
                ));
            }
            t
        }
        (Some(t), None) => parse_dtype(t)?,
        (None, Some((n, _))) => *n,
        (None, None) => return Err("--dtype is required for raw input".into()),
    };
    let shape = match (&a.shape, &input.npy) {
        (Some(s), Some((_, n))) => {
            let s = parse_fixed("shape", s)?;
            if &s != n {
                return Err(format!(
                    "--shape {} does not match the .npy input's {}",
                    dims_text(s.iter().map(|&d| Some(d))),
                    dims_text(n.iter().map(|&d| Some(d)))
                ));
            }
            s
        }
        (Some(s), None) => parse_fixed("shape", s)?,
        (None, Some((_, n))) => n.clone(),
        (None, None) => return Err("--shape is required for raw input".into()),
    };
    let chunks = parse_fixed("chunks", &a.chunks)?;
    let elems = shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or("--shape: too many elements")?;
    let expected = elems
        .checked_mul(dtype.size as u64)
        .ok_or("--shape: too many bytes")?;
    let wrong_length = |held: u64| {
        format!(
            "the input holds {held} bytes; shape {} of {} needs {expected}",
            dims_text(shape.iter().map(|&d| Some(d))),
            dtype.numpy()
        )
    };
    if let Some(held) = input.len
        && held != expected
    {
        return Err(wrong_length(held));
    }
    let existed = a.file.exists();
    let f = if existed {
        if a.libver.is_some() {
            return Err(format!(
                "{}: --libver applies to new files only, and this one exists",
                a.file.display()
            ));
        }
        File::open_rw(&a.file)
    } else {
        LibverBounds::new(
            libver(a.libver.unwrap_or(LibverArg::Earliest)),
            Libver::Latest,
        )
        .and_then(|bounds| {
            File::create_with(
                &a.file,
                FileOptions {
                    bounds,
                    mode: CreateMode::Exclusive,
                    ..FileOptions::default()
                },
            )
        })
    };
    let f = f.map_err(|e| e.to_string())?;
    make_parents(&f, &a.dataset)?;
    let mut b = f.new_dataset_of(dtype).shape(&shape).chunk(&chunks);
    if let Some(m) = &a.maxshape {
        b = b.max_shape(&parse_dims("maxshape", m)?);
    }
    // h5py's order: shuffle, then compression, then the checksum.
    if a.shuffle {
        b = b.filter(FilterSpec::Shuffle);
    }
    if let Some(level) = a.deflate {
        b = b.filter(FilterSpec::Deflate(level));
    }
    if a.lzf {
        b = b.filter(FilterSpec::Lzf);
    }
    if let Some(block) = a.lz4 {
        b = b.filter(FilterSpec::Lz4(block));
    }
    match a.bitshuffle {
        Some(mode) => {
            if !a.bitshuffle_block.is_multiple_of(8) {
                return Err("--bitshuffle-block must be a multiple of 8".into());
            }
            b = b.filter(FilterSpec::Bitshuffle {
                block_size: a.bitshuffle_block,
                compression: match mode {
                    BitshuffleArg::None => BitshuffleCompression::None,
                    BitshuffleArg::Lz4 => BitshuffleCompression::Lz4,
                    BitshuffleArg::Zstd => BitshuffleCompression::Zstd(a.zstd.unwrap_or(3)),
                },
            });
        }
        None => {
            if let Some(level) = a.zstd {
                b = b.filter(FilterSpec::Zstd(level));
            }
        }
    }
    if let Some(level) = a.bzip2 {
        b = b.filter(FilterSpec::Bzip2(level));
    }
    let codec = |c: BloscCodecArg| match c {
        BloscCodecArg::Blosclz => BloscCodec::BloscLz,
        BloscCodecArg::Lz4 => BloscCodec::Lz4,
        BloscCodecArg::Lz4hc => BloscCodec::Lz4Hc,
        BloscCodecArg::Zlib => BloscCodec::Zlib,
        BloscCodecArg::Zstd => BloscCodec::Zstd,
    };
    let shuffle = match a.blosc_shuffle {
        BloscShuffleArg::None => BloscShuffle::None,
        BloscShuffleArg::Byte => BloscShuffle::Byte,
        BloscShuffleArg::Bit => BloscShuffle::Bit,
        BloscShuffleArg::Delta => BloscShuffle::Delta,
    };
    if let Some(c) = a.blosc {
        b = b.filter(FilterSpec::Blosc {
            codec: codec(c),
            level: a.blosc_level,
            shuffle,
        });
    }
    if let Some(c) = a.blosc2 {
        b = b.filter(FilterSpec::Blosc2 {
            codec: codec(c),
            level: a.blosc_level,
            shuffle,
        });
    }
    if a.lzo {
        b = b.filter(FilterSpec::Lzo);
    }
    if let Some(method) = a.szip {
        if !a.szip_block.is_multiple_of(2) || !(2..=32).contains(&a.szip_block) {
            return Err("--szip-block must be an even number from 2 to 32".into());
        }
        b = b.filter(FilterSpec::Szip {
            nn: method == SzipArg::Nn,
            pixels_per_block: a.szip_block,
        });
    }
    if a.fletcher32 {
        b = b.filter(FilterSpec::Fletcher32);
    }
    if let Some(v) = &a.fill {
        b = b.fill_value_bytes(&parse_value(dtype, v)?);
    }
    if let Some(t) = a.alloc {
        b = b.alloc_time(match t {
            AllocArg::Early => AllocTime::Early,
            AllocArg::Late => AllocTime::Late,
            AllocArg::Incremental => AllocTime::Incremental,
        });
    }
    if let Some(i) = a.index {
        b = b.index(index_kind(i));
    }
    let d = b
        .create(&a.dataset)
        .map_err(|e| format!("{}: creating {}: {e}", a.file.display(), a.dataset))?;
    if let Err(e) = write_values(&d, &shape, dtype, &mut input, expected) {
        if !existed {
            // Nothing of a new file is worth keeping.
            let _ = std::fs::remove_file(&a.file);
        }
        fail_now(&match e {
            WriteError::Input(held) => format!("{}: {}", input.what, wrong_length(held)),
            WriteError::Other(e) => format!("{}: writing {}: {e}", a.file.display(), a.dataset),
        });
    }
    drop(d);
    if let Err(e) = f.close() {
        fail_now(&format!("{}: {e}", a.file.display()));
    }
    Ok(Outcome::Ok)
}

/// Report `message` and exit at once. Used once a file may hold unflushed changes: dropping it
/// would try to flush again and print a second error line.
fn fail_now(message: &str) -> ! {
    eprintln!("h5chunk: error: {}", message.replace('\n', " "));
    std::process::exit(1)
}

/// Why the values could not be written.
enum WriteError {
    /// The input held this many bytes, not the dataset's.
    Input(u64),
    Other(String),
}

/// Stream the input's values into `d` in slabs of whole chunk rows along the first dimension
/// (memory: one slab, whatever the input's size), with a progress bar. `expected`: the
/// values' bytes.
fn write_values(
    d: &Dataset,
    shape: &[u64],
    dtype: TypeDesc,
    input: &mut Input,
    expected: u64,
) -> Result<(), WriteError> {
    let other = |e: String| WriteError::Other(e);
    if shape.is_empty() {
        // A scalar: one element.
        let mut v = Vec::new();
        (&mut input.reader)
            .take(expected.saturating_add(1))
            .read_to_end(&mut v)
            .map_err(|e| other(format!("{}: {e}", input.what)))?;
        if v.len() as u64 != expected {
            return Err(WriteError::Input(v.len() as u64));
        }
        if let Some((order, _)) = &input.npy {
            order.to_from_le(&mut v);
        }
        return d.write_raw(&v).map_err(|e| other(e.to_string()));
    }
    let mut w = d.row_writer(SLAB_BYTES).map_err(|e| other(e.to_string()))?;
    let rows = shape.first().copied().unwrap_or(0);
    let mut bar = Progress::new("import");
    let elem = dtype.size.max(1);
    // Whole elements at a time, so byte order can be fixed per buffer.
    let mut buf = vec![
        0u8;
        (1usize << 20)
            .saturating_div(elem)
            .max(1)
            .saturating_mul(elem)
    ];
    let mut held = 0u64;
    let mut pending = 0usize;
    loop {
        let n = match input
            .reader
            .read(buf.get_mut(pending..).unwrap_or_default())
        {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(other(format!("{}: {e}", input.what))),
        };
        held = held.saturating_add(n as u64);
        if held > expected {
            return Err(WriteError::Input(held));
        }
        pending = pending.saturating_add(n);
        let whole = pending.checked_div(elem).unwrap_or(0).saturating_mul(elem);
        if let Some(ready) = buf.get_mut(..whole) {
            // A `.npy` in big-endian order: to little-endian (raw input is little-endian).
            if let Some((order, _)) = &input.npy {
                order.to_from_le(ready);
            }
            w.write_all(ready).map_err(|e| other(e.to_string()))?;
        }
        buf.copy_within(whole..pending, 0);
        pending = pending.saturating_sub(whole);
        bar.set(w.rows_written(), rows);
        if n == 0 {
            break;
        }
    }
    if held != expected {
        return Err(WriteError::Input(held));
    }
    w.finish().map_err(|e| other(e.to_string()))?;
    bar.set(rows, rows);
    bar.finish();
    Ok(())
}

fn check(file: &Path) -> CliResult<Outcome> {
    let f = match open_file(file) {
        Ok(f) => f,
        Err(e @ h5chunk::Error::Io { .. }) => return Err(e.to_string()),
        // A file that does not open because it is damaged is a problem found, not a failure
        // to run the check.
        Err(e) => {
            println!("problem: 0x0: /: {e}");
            println!("1 problem");
            return Ok(Outcome::Problems);
        }
    };
    let mut bar = Progress::new("check");
    let report = f.check_with(&mut |done, total| bar.set(done, total));
    bar.finish();
    let mut out = std::io::stdout().lock();
    let mut lines: Vec<String> = report
        .problems
        .iter()
        .map(|p| format!("problem: {p}"))
        .collect();
    lines.extend(report.skipped.iter().map(|s| format!("skipped: {s}")));
    let n = report.problems.len();
    let skipped = report.skipped.len();
    lines.push(format!(
        "checked {} groups, {} datasets, {} chunks: {n} problem{}{}",
        report.groups,
        report.datasets,
        report.chunks,
        if n == 1 { "" } else { "s" },
        if skipped == 0 {
            String::new()
        } else {
            format!("; {skipped} not verified (unsupported)")
        }
    ));
    for l in lines {
        if writeln!(out, "{l}").is_err() {
            break;
        }
    }
    Ok(if !report.is_clean() {
        Outcome::Problems
    } else if skipped > 0 {
        Outcome::Unverified
    } else {
        Outcome::Ok
    })
}

/// `h5chunk recover FILE`.
fn clear(file: &Path) -> Result<Outcome, String> {
    if File::clear_consistency_flags(file).map_err(|e| e.to_string())? {
        println!("{}: file consistency flags cleared", file.display());
    } else {
        println!("{}: no file consistency flags set", file.display());
    }
    Ok(Outcome::Ok)
}

fn recover(file: &Path) -> Result<Outcome, String> {
    match File::recover(file).map_err(|e| e.to_string())? {
        Some(r) => println!(
            "{}: rolled back to the last completed flush ({} ranges, {} bytes restored; {} bytes long)",
            file.display(),
            r.records,
            r.bytes,
            r.durable_len
        ),
        None => println!("{}: nothing to recover", file.display()),
    }
    Ok(Outcome::Ok)
}
