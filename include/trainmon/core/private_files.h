// SPDX-License-Identifier: Apache-2.0
// Files in shared places (/tmp/trainmon-UID, $XDG_RUNTIME_DIR/trainmon, the per-run socket folders,
// the reports folder, the alert spool): every create, read and removal goes through here, so that
// another local user can neither redirect nor block us:
//   - directories we keep files in are ours, 0700-ish (no group/other write) and not a symlink;
//   - files are created under a fresh unpredictable name with O_EXCL | O_NOFOLLOW, then renamed;
//   - files are read with O_NOFOLLOW | O_NONBLOCK and checked to be regular files we own (a FIFO
//     planted in place of a snapshot cannot hang the reader; a symlink is never followed);
//   - folders are removed entry by entry relative to an O_NOFOLLOW directory descriptor.
// Errors carry domain os, the errno name and a sentence naming the path.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "trainmon/core/error.h"

namespace trainmon::files {

/// `dir` exists as a directory we may keep private files in: created 0700 when missing (its parent
/// must exist), then checked with lstat: a directory (not a symlink to one), owned by our effective
/// uid, not writable by group or others. Errors: cannot be created, or fails a check (EPERM, with a
/// sentence saying which).
Expected<void> ensure_private_dir(const std::string& dir);

/// Reads the regular file `path` without following a symlink at its last component and without
/// blocking (a FIFO or device there is refused, not opened for a wait), at most `max_bytes` bytes.
/// `own`: refuse a file owned by another user as well. Errors: missing (ENOENT), not a regular file
/// or not ours (EPERM), larger than max_bytes (EFBIG), read errors.
Expected<std::string> read_regular_file(const std::string& path, std::size_t max_bytes, bool own = true);

/// read_regular_file for `path` relative to the directory descriptor `dir_fd` (AT_FDCWD: the
/// current directory), so that a directory checked once (open_private_dir) cannot be swapped under
/// the read. Same checks and errors.
Expected<std::string> read_regular_file_at(int dir_fd, const std::string& path, std::size_t max_bytes,
                                           bool own = true);

/// Opens `dir` for reading its entries (O_DIRECTORY | O_NOFOLLOW) and checks the opened directory as
/// ensure_private_dir does (ours, not writable by group or others), on the descriptor itself: no
/// window between check and use. Never creates it. The caller closes the descriptor. Errors: missing
/// (ENOENT), a symbolic link or fails a check (EPERM), cannot be opened.
Expected<int> open_private_dir(const std::string& dir);

/// Writes `content` to `path` atomically: a temporary file in the same directory under a fresh
/// random name (".NAME.XXXXXX", O_CREAT | O_EXCL | O_NOFOLLOW: never a file or link someone else
/// put there), given `mode`, then rename(2) over `path` (a link at `path` is replaced, never
/// followed). A reader sees the old or the new document, never half of one. The temporary file is
/// removed on any error.
Expected<void> write_file_atomic(const std::string& path, std::string_view content, mode_t mode = 0600);

/// Writes `content` to `path`, a file the user named (`-o FILE`), the way a shell redirection would
/// treat what is there, without its risks:
/// - nothing, or a regular file: write_file_atomic, keeping an existing file's mode (`mode` for a
///   new one);
/// - a device, FIFO or socket (`-o /dev/null`, `-o /dev/stdout` at a terminal or pipe): written
///   into, never replaced (a FIFO without a reader: ENXIO, no wait);
/// - a symbolic link owned by this user or by root: written through, to what it points at, by the
///   same two rules (a rules file linked into /etc/prometheus stays a link);
/// - a symbolic link owned by another user (planted in a shared folder): replaced, never followed.
/// Errors: the OS error with the path; nothing is left half-written in place of a regular file.
Expected<void> write_output_file(const std::string& path, std::string_view content, mode_t mode);

/// The mode a new file gets from open(2) with 0666 under the process's umask (for files meant to be
/// shared as before, such as HTML reports).
mode_t default_file_mode();

/// Removes directory `dir` and everything in it (up to 8 levels of subdirectories), each level
/// relative to a descriptor opened with O_NOFOLLOW, so a symlink planted in its place or inside is
/// removed as a link, never followed. Only directories owned by our effective uid are touched (one
/// that is not stays, and so does `dir`). Errors: not ours (EPERM), or the removal failed.
Expected<void> remove_private_dir(const std::string& dir);

}  // namespace trainmon::files
