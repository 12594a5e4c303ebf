//! The `h5chunk` command-line tool. Its commands (`ls`, `inspect`, `cat`, `import`, `check`)
//! arrive with their own issue; until then it says so and exits non-zero.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!("h5chunk: no commands are implemented yet (unsupported: command-line tool)");
    ExitCode::FAILURE
}
