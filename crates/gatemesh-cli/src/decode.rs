use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};

/// Print the text of every QR code found in the given images, one per line.
/// Exit status 1 if any image held no readable code.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// PNG or JPEG images: ticket files, scans of printed sheets, photos of screens.
    #[arg(required = true)]
    images: Vec<PathBuf>,
    /// One JSON object per code, `{"file": …, "code": …}`, saying which image it came from
    /// (plain: one code per line).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let mut all_read = true;
    for path in &args.images {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        match gatemesh_qr::decode_image(&bytes) {
            Ok(texts) if !texts.is_empty() => {
                for t in &texts {
                    if args.json {
                        println!("{}", serde_json::json!({ "file": path, "code": t }));
                    } else {
                        println!("{t}");
                    }
                }
            }
            Ok(_) => {
                eprintln!("{}: no QR code found", path.display());
                all_read = false;
            }
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                all_read = false;
            }
        }
    }
    Ok(if all_read {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
