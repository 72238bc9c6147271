//! Runs `examples/echo.rs` as a process and talks to it over TCP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn example_path() -> PathBuf {
    // Integration tests live in target/<profile>/deps; examples beside it.
    let mut path = std::env::current_exe().expect("test binary path");
    path.pop();
    if path.ends_with("deps") {
        path.pop();
    }
    path.join("examples").join("echo")
}

#[test]
fn echo_example_serves_concurrent_clients() {
    let mut child = Command::new(example_path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("cargo test builds examples");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("banner");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .expect("banner format")
        .to_string();

    let clients: Vec<_> = (0..8)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let payload: Vec<u8> = (0..200_000u32).map(|b| (b * 7 + i) as u8).collect();
                let mut writer = s.try_clone().unwrap();
                let to_send = payload.clone();
                let w = std::thread::spawn(move || {
                    writer.write_all(&to_send).unwrap();
                    writer.shutdown(std::net::Shutdown::Write).unwrap();
                });
                let mut got = Vec::new();
                s.read_to_end(&mut got).unwrap();
                w.join().unwrap();
                assert_eq!(got, payload);
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
