//! The C example client and server (examples/c/), compiled with the
//! system's C compiler against the library, move a 4 MiB file over
//! loopback, IPv4 and IPv6, and the copy's SHA-256 matches the original's.
//!
//! Without a C compiler the test says so and passes, except under CI=true,
//! where it fails: `scripts/setup` installs one.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

const FILE_BYTES: usize = 4 << 20;
const LIMIT: Duration = Duration::from_secs(90);

fn c_compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let found = Command::new(&cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    found.then_some(cc)
}

/// The directory cargo left libbrisk_capi.so in: the test binary sits in its
/// `deps/` subdirectory.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let deps = exe.parent().expect("the test binary sits in deps/");
    for dir in [deps, deps.parent().expect("deps/ has a parent")] {
        if dir.join("libbrisk_capi.so").exists() {
            return dir.to_path_buf();
        }
    }
    panic!(
        "libbrisk_capi.so is neither in {} nor beside it",
        deps.display()
    );
}

fn compile(cc: &str, source: &str, out: &Path, lib: &Path) {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(cc)
        .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("examples/c").join(source))
        .arg("-o")
        .arg(out)
        .arg("-L")
        .arg(lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lbrisk_capi")
        .status()
        .expect("the C compiler runs");
    assert!(status.success(), "{cc} failed on examples/c/{source}");
}

/// A file of seeded pseudo-random bytes (xorshift64), so a transfer that
/// drops, repeats or reorders any piece changes the hash.
fn test_file(path: &Path) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes: Vec<u8> = (0..FILE_BYTES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(&bytes))
        .expect("the temporary directory is writable");
    bytes
}

/// Waits for `child`, killing it past the deadline.
fn finish(mut child: Child, name: &str, deadline: Instant) -> String {
    loop {
        if let Some(status) = child.try_wait().expect("the child can be waited on") {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                std::io::Read::read_to_string(&mut e, &mut err).expect("stderr is text");
            }
            assert!(status.success(), "{name} exited with {status}: {err}");
            return err;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn transfer(listen: &str, connect_host: &str, family: &str) {
    let Some(cc) = c_compiler() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no C compiler (cc): scripts/setup installs one"
        );
        println!("skipped: no C compiler (cc) on this machine; scripts/setup installs one");
        return;
    };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capi-c-example-{family}"));
    std::fs::create_dir_all(&tmp).expect("the temporary directory can be made");
    let lib = library_dir();
    let (server_bin, client_bin) = (tmp.join("server"), tmp.join("client"));
    compile(&cc, "server.c", &server_bin, &lib);
    compile(&cc, "client.c", &client_bin, &lib);
    let (original_path, copy_path) = (tmp.join("original.bin"), tmp.join("copy.bin"));
    let original = test_file(&original_path);

    let deadline = Instant::now() + LIMIT;
    let mut server = Command::new(&server_bin)
        .arg(listen)
        .arg(&original_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the compiled server starts");
    let mut first_line = String::new();
    BufReader::new(server.stdout.take().expect("stdout is piped"))
        .read_line(&mut first_line)
        .expect("the server prints its key and port");
    let (key, port) = first_line
        .trim()
        .split_once(' ')
        .expect("the server's first line is KEY PORT");
    let client = Command::new(&client_bin)
        .arg(format!("{connect_host}:{port}"))
        .arg(key)
        .arg(&copy_path)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the compiled client starts");
    let client_says = finish(client, "the C client", deadline);
    let server_says = finish(server, "the C server", deadline);
    println!("{family}: {}; {}", client_says.trim(), server_says.trim());

    let copy = std::fs::read(&copy_path).expect("the client wrote its copy");
    assert_eq!(copy.len(), original.len(), "{family}: bytes received");
    assert_eq!(
        Sha256::digest(&copy),
        Sha256::digest(&original),
        "{family}: the copy's SHA-256 differs from the original's"
    );
}

#[test]
fn c_client_fetches_a_file_from_c_server_ipv4() {
    transfer("127.0.0.1:0", "127.0.0.1", "IPv4");
}

#[test]
fn c_client_fetches_a_file_from_c_server_ipv6() {
    transfer("[::1]:0", "[::1]", "IPv6");
}
