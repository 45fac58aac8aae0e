//! What a Registration reports when the loader is missing, fails or says something else
//! than its protocol: a stand-in loader (a shell script) in a directory of empty objects.
//! Needs no root.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use millinet_bpfcc::{BpfCcError, Registration};

/// Held while a test writes its stand-in loader and while one starts a loader: a child forked
/// by one test thread inherits every descriptor open in the process until it execs, so a
/// script still open for writing in another thread cannot be executed then (ETXTBSY, "Text
/// file busy"). The tests of this file run on parallel threads.
static FILES_AND_FORKS: Mutex<()> = Mutex::new(());

fn files_and_forks() -> MutexGuard<'static, ()> {
    FILES_AND_FORKS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A build directory whose loader is `script` and whose objects are empty files.
fn build_dir(script: Option<&str>) -> tempfile::TempDir {
    let _guard = files_and_forks();
    let dir = tempfile::tempdir().expect("temporary directory");
    for object in ["highspeed.bpf.o", "coupled.bpf.o", "scalable.bpf.o"] {
        std::fs::write(dir.path().join(object), b"").expect("object");
    }
    if let Some(script) = script {
        let loader = dir.path().join("mn-bpfcc-loader");
        std::fs::write(&loader, format!("#!/bin/sh\n{script}\n")).expect("loader");
        std::fs::set_permissions(&loader, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    dir
}

fn register(dir: &Path) -> Result<Registration, BpfCcError> {
    let _guard = files_and_forks();
    Registration::new(dir)
}

#[test]
fn a_missing_loader_is_not_built() {
    let dir = build_dir(None);
    match register(dir.path()) {
        Err(BpfCcError::NotBuilt { path }) => assert_eq!(path, dir.path().join("mn-bpfcc-loader")),
        other => panic!("expected NotBuilt, got {:?}", other.err()),
    }
}

#[test]
fn a_refusal_carries_the_loaders_message() {
    let dir = build_dir(Some("echo 'mn-bpfcc-loader: the kernel refused the object: Permission denied' >&2; exit 1"));
    match register(dir.path()) {
        Err(BpfCcError::Refused { status, stderr }) => {
            assert_eq!(status.code(), Some(1));
            assert!(stderr.contains("Permission denied"), "{stderr}");
        }
        other => panic!("expected Refused, got {:?}", other.err()),
    }
}

#[test]
fn an_unknown_stem_is_a_protocol_error_naming_the_allowed_ones() {
    let dir = build_dir(Some("echo 'cubic mn1_cubic'; echo ready; cat >/dev/null"));
    match register(dir.path()) {
        Err(e @ BpfCcError::Protocol { .. }) => {
            let text = e.to_string();
            assert!(text.contains("cubic mn1_cubic") && text.contains("\"balia\""), "{text}");
        }
        other => panic!("expected Protocol, got {:?}", other.err()),
    }
}

#[test]
fn a_control_left_out_is_reported() {
    let dir = build_dir(Some("echo 'hs mn1_hs'; echo 'lia mn1_lia'; echo 'olia mn1_olia'; echo ready; cat >/dev/null"));
    match register(dir.path()) {
        Err(BpfCcError::Unregistered { stem }) => assert_eq!(stem, "balia"),
        other => panic!("expected Unregistered, got {:?}", other.err()),
    }
}

#[test]
fn names_are_read_and_drop_ends_the_loader() {
    // The stand-in exits when its standard input closes, as the real loader does; `wait` in
    // Drop returns only then.
    let dir = build_dir(Some("for s in hs lia olia balia dctcp pragu; do echo \"$s mn1_$s\"; done; echo ready; cat >/dev/null"));
    let registration = register(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(registration.name(millinet_bpfcc::Cc::Olia), "mn1_olia");
    let pid = registration.loader_pid() as i32;
    drop(registration);
    // SAFETY: signal 0 only asks whether the (reaped) process still exists.
    assert_ne!(unsafe { libc::kill(pid, 0) }, 0, "the loader still runs after the drop");
}
