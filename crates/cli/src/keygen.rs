//! `brisk keygen [-o PREFIX]`: a server's static key pair as two files,
//! `PREFIX.key` (secret, mode 0600) and `PREFIX.pub` (public), in the
//! formats of docs/IO.md.

use anyhow::{Context, Result, bail};
use brisk_io::keys;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct KeygenArgs {
    /// Path prefix of the two files written: PREFIX.key and PREFIX.pub.
    #[arg(short = 'o', long = "out", default_value = "brisk")]
    prefix: PathBuf,
    /// Replace existing files.
    #[arg(long)]
    force: bool,
}

pub fn run(args: KeygenArgs) -> Result<()> {
    let secret_path = args.prefix.with_extension("key");
    let public_path = args.prefix.with_extension("pub");
    for p in [&secret_path, &public_path] {
        if p.exists() && !args.force {
            bail!("{} exists (use --force to replace it)", p.display());
        }
    }
    let (secret, keypair) = keys::generate()?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&secret_path)
        .with_context(|| format!("writing {}", secret_path.display()))?;
    f.write_all(keys::secret_file_text(&secret).as_bytes())
        .with_context(|| format!("writing {}", secret_path.display()))?;
    std::fs::write(&public_path, keys::public_file_text(&keypair.public()))
        .with_context(|| format!("writing {}", public_path.display()))?;
    println!("{}", keys::to_hex(&keypair.public()));
    eprintln!(
        "brisk: wrote {} (secret) and {} (public)",
        secret_path.display(),
        public_path.display()
    );
    Ok(())
}
