// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//! The files the plugin opens by name itself (libdaos's default log, the totals file), opened
//! so that another local user cannot choose what they are: the plugin often runs as root, and a
//! name in a shared directory such as /tmp can be created first by anyone.
//!
//! - `open_append` opens a file `O_NOFOLLOW|O_CREAT|O_APPEND` (mode 0600 when it creates it) and
//!   keeps it only if the open file is a regular file owned by this process's effective uid with
//!   no other hard link: a symbolic link planted at the name fails the open, and a file someone
//!   else created (or a second name of someone's file) is refused. Checked on the open file, so
//!   nothing can be swapped between the check and the write.
//! - `private_dir` makes a directory (mode 0700) and keeps it only if it is a real directory
//!   owned by the effective uid that group and others cannot enter, in a parent where no one else
//!   can rename it away (owned by root or this user, and sticky if others can write it, as /tmp
//!   is). Names inside it are then this user's alone, also for a library that later reopens
//!   them by path, following links (libdaos and its log).
//!
//! Every refusal names the path, what was found there and what to do.

use std::fs::{DirBuilder, File, FileType, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Something is at the path that the plugin must not write through.
    #[error("{}: {found}; {fix}", path.display())]
    Unsafe { path: PathBuf, found: String, fix: String },
    #[error("cannot open {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// This process's effective uid: whose files it may write to.
pub fn euid() -> u32 {
    // SAFETY: geteuid takes no arguments, always succeeds and touches no memory of ours.
    unsafe { libc::geteuid() }
}

/// Opens `path` for appending, creating it with mode 0600 if absent, and returns it only if it
/// is a regular file owned by this process's effective uid with one name (see the module's
/// comment). A symbolic link at `path` is refused, not followed.
pub fn open_append(path: &Path) -> Result<File, Error> {
    open_append_for(path, euid())
}

/// Makes the directory `dir` (mode 0700) if absent and checks that it is this user's alone (see
/// the module's comment). Its parent must exist.
pub fn private_dir(dir: &Path) -> Result<(), Error> {
    private_dir_for(dir, euid())
}

fn open_append_for(path: &Path, uid: u32) -> Result<File, Error> {
    // O_NONBLOCK: a FIFO planted at the name must not hang the open waiting for a reader (it is
    // refused below); on a regular file it changes nothing.
    let opened = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Ok(f) => f,
        // ELOOP for a link (O_NOFOLLOW), ENXIO for a FIFO without a reader, ...: say what is there.
        Err(source) => match std::fs::symlink_metadata(path) {
            Ok(m) if !m.is_file() => return Err(not_a_file(path, &m)),
            _ => return Err(Error::Io { path: path.to_path_buf(), source }),
        },
    };
    let m = file.metadata().map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    check_file(path, &m, uid)?;
    Ok(file)
}

fn private_dir_for(dir: &Path, uid: u32) -> Result<(), Error> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let pm = std::fs::metadata(parent).map_err(|source| Error::Io { path: parent.to_path_buf(), source })?;
    check_parent(parent, &pm, dir, uid)?;
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(source) => return Err(Error::Io { path: dir.to_path_buf(), source }),
    }
    // lstat: a link planted at the name is itself refused, wherever it points.
    let m = std::fs::symlink_metadata(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
    check_dir(dir, &m, uid)
}

fn kind(t: FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// What is at `path`, which is not a regular file (`m` from lstat).
fn not_a_file(path: &Path, m: &Metadata) -> Error {
    let found = match std::fs::read_link(path) {
        Ok(target) if m.file_type().is_symlink() => {
            format!(
                "is a symbolic link (to {}), owned by uid {}, which the plugin does not follow",
                target.display(),
                m.uid()
            )
        }
        _ => format!("is {}, owned by uid {}, not a regular file", kind(m.file_type()), m.uid()),
    };
    let fix = "remove it (another user may have put it there to have this process write elsewhere), or name a \
               file in a directory only you can write"
        .to_string();
    Error::Unsafe { path: path.to_path_buf(), found, fix }
}

fn check_file(path: &Path, m: &Metadata, uid: u32) -> Result<(), Error> {
    let unsafe_ =
        |found: String, fix: &str| Err(Error::Unsafe { path: path.to_path_buf(), found, fix: fix.to_string() });
    if !m.is_file() {
        return Err(not_a_file(path, m));
    }
    if m.uid() != uid {
        return unsafe_(
            format!(
                "the file belongs to uid {}, not to this process's uid {uid}: another user may have created it first",
                m.uid()
            ),
            "remove it, or name a file in a directory only you can write",
        );
    }
    if m.nlink() != 1 {
        return unsafe_(
            format!("the file has {} hard links: it may be a second name of another file", m.nlink()),
            "remove this name, or name another file",
        );
    }
    Ok(())
}

fn check_dir(dir: &Path, m: &Metadata, uid: u32) -> Result<(), Error> {
    let unsafe_ = |found: String, fix: String| Err(Error::Unsafe { path: dir.to_path_buf(), found, fix });
    let d = dir.display();
    if m.file_type().is_symlink() {
        let target = std::fs::read_link(dir).map(|t| t.display().to_string()).unwrap_or_else(|_| "?".into());
        return unsafe_(
            format!("is a symbolic link (to {target}), owned by uid {}, not a directory of this user's", m.uid()),
            "remove it (another user may have planted it), or set TMPDIR to a directory of your own".to_string(),
        );
    }
    if !m.is_dir() {
        return unsafe_(
            format!("is {}, owned by uid {}, not a directory", kind(m.file_type()), m.uid()),
            "remove it, or set TMPDIR to a directory of your own".to_string(),
        );
    }
    if m.uid() != uid {
        return unsafe_(
            format!(
                "the directory belongs to uid {}, not to this process's uid {uid}: another user created it first",
                m.uid()
            ),
            "have it removed (its owner or root can), or set TMPDIR to a directory of your own".to_string(),
        );
    }
    if m.mode() & 0o077 != 0 {
        return unsafe_(
            format!("the directory has mode {:04o}: group or others can enter it", m.mode() & 0o7777),
            format!("chmod 700 {d}, or remove it"),
        );
    }
    Ok(())
}

/// The parent of a private directory must not let anyone else rename the directory away and put
/// something of theirs at its name: owned by root or this user, and sticky if others can write it.
fn check_parent(parent: &Path, m: &Metadata, dir: &Path, uid: u32) -> Result<(), Error> {
    let fix = "set TMPDIR to a directory that only you or root can write, or a sticky one such as /tmp".to_string();
    let found = if m.uid() != 0 && m.uid() != uid {
        format!("the directory belongs to uid {}, who could replace {} in it", m.uid(), dir.display())
    } else if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
        format!(
            "the directory has mode {:04o}: others can write it and it is not sticky, so they could replace {} in it",
            m.mode() & 0o7777,
            dir.display()
        )
    } else {
        return Ok(());
    };
    Err(Error::Unsafe { path: parent.to_path_buf(), found, fix })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    /// A fresh directory of this user's (mode 0700) under the temp dir, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let p = std::env::temp_dir().join(format!("nixl-daos-pf-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            DirBuilder::new().mode(0o700).create(&p).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
            Scratch(p)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn refused(r: Result<impl std::fmt::Debug, Error>, path: &Path, says: &str) {
        match r {
            Err(e @ Error::Unsafe { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(&path.display().to_string()) && msg.contains(says), "{msg}");
            }
            other => panic!("{} not refused: {other:?}", path.display()),
        }
    }

    const OTHER_UID: u32 = 65534;

    fn am_root() -> bool {
        euid() == 0
    }

    #[test]
    fn happy_path_makes_a_0700_dir_and_a_0600_file_and_appends() {
        let s = Scratch::new("happy");
        let dir = s.0.join("nixl-daos.1");
        private_dir(&dir).unwrap();
        private_dir(&dir).unwrap(); // existing and ours: kept
        let m = std::fs::symlink_metadata(&dir).unwrap();
        assert!(m.is_dir() && m.uid() == euid() && m.mode() & 0o7777 == 0o700, "{:o}", m.mode());
        let f = dir.join("x.log");
        open_append(&f).unwrap().write_all(b"one\n").unwrap();
        open_append(&f).unwrap().write_all(b"two\n").unwrap();
        let m = std::fs::metadata(&f).unwrap();
        assert!(m.is_file() && m.uid() == euid() && m.mode() & 0o7777 == 0o600, "{:o}", m.mode());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "one\ntwo\n");
        // A sticky, world-writable parent (as /tmp) is fine.
        let sticky = s.0.join("sticky");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        private_dir(&sticky.join("nixl-daos.1")).unwrap();
    }

    #[test]
    fn symlink_at_the_file_is_refused_and_its_target_unchanged() {
        let s = Scratch::new("link");
        let victim = s.0.join("victim");
        std::fs::write(&victim, "secret\n").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = s.0.join("x.log");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        refused(open_append(&link), &link, "symbolic link");
        // A dangling link is not followed into creating its target either.
        let dangling = s.0.join("y.log");
        std::os::unix::fs::symlink(s.0.join("created-through-link"), &dangling).unwrap();
        refused(open_append(&dangling), &dangling, "symbolic link");
        assert!(!s.0.join("created-through-link").exists());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret\n");
    }

    #[test]
    fn file_of_another_uid_is_refused() {
        let s = Scratch::new("owner");
        let f = s.0.join("x.log");
        std::fs::write(&f, "theirs\n").unwrap();
        // Checked as if this process were someone else (works without root) ...
        refused(open_append_for(&f, euid().wrapping_add(1)), &f, "belongs to uid");
        // ... and, as root, against a file really owned by another uid.
        if am_root() {
            std::os::unix::fs::chown(&f, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
            refused(open_append(&f), &f, &format!("belongs to uid {OTHER_UID}"));
        }
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "theirs\n");
    }

    #[test]
    fn second_name_fifo_and_directory_are_refused() {
        let s = Scratch::new("kinds");
        let f = s.0.join("a");
        std::fs::write(&f, "a\n").unwrap();
        let second = s.0.join("b");
        std::fs::hard_link(&f, &second).unwrap();
        refused(open_append(&second), &second, "2 hard links");
        let fifo = s.0.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a NUL-terminated path alive for the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0);
        refused(open_append(&fifo), &fifo, "a FIFO"); // and does not hang without a reader
        let d = s.0.join("d");
        std::fs::create_dir(&d).unwrap();
        refused(open_append(&d), &d, "a directory");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "a\n");
    }

    #[test]
    fn dir_open_to_others_or_of_another_uid_or_a_link_is_refused() {
        let s = Scratch::new("dirs");
        let open = s.0.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        refused(private_dir(&open), &open, "mode 0777");
        let theirs = s.0.join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        refused(private_dir_for(&theirs, euid().wrapping_add(1)), &theirs, "belongs to uid");
        if am_root() {
            std::os::unix::fs::chown(&theirs, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
            refused(private_dir(&theirs), &theirs, &format!("belongs to uid {OTHER_UID}"));
        }
        // A link to a directory of this user's, 0700, is still refused: its name is not ours.
        let real = s.0.join("real");
        DirBuilder::new().mode(0o700).create(&real).unwrap();
        let link = s.0.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        refused(private_dir(&link), &link, "symbolic link");
        let file = s.0.join("file");
        std::fs::write(&file, "").unwrap();
        refused(private_dir(&file), &file, "a regular file");
    }

    #[test]
    fn parent_where_others_could_swap_the_dir_is_refused() {
        let s = Scratch::new("parent");
        let p = s.0.join("p");
        std::fs::create_dir(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
        refused(private_dir(&p.join("nixl-daos.1")), &p, "not sticky");
        assert!(!p.join("nixl-daos.1").exists());
        if am_root() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o1755)).unwrap();
            std::os::unix::fs::chown(&p, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
            refused(private_dir(&p.join("nixl-daos.1")), &p, &format!("belongs to uid {OTHER_UID}"));
        }
    }
}
