import Foundation
import Glibc
#if canImport(Glibc)
import LecternConfiguration
import Logging
#endif

/// Makes a library database one daemon's: an exclusive `flock` on `<database>.lock` beside it, held for the
/// process's lifetime. The bus name only keeps a second lecternd off the same bus; this keeps one on another bus
/// (another `--bus-address` or session) from opening the same library. The kernel drops the lock however the
/// process ends, SIGKILL included, so a lock file left behind means nothing and is never removed (removing it
/// would let two daemons lock two different files of the same name). The file holds its holder's pid and bus,
/// for the message of the daemon it refuses.
///
/// ```swift
/// let lock = try DatabaseLock(database: "/home/me/.local/share/lectern/library.sqlite", bus: "the session bus",
///                             logger: logger)   // throws DaemonError.libraryInUse while another daemon holds it
/// defer { lock.release() }
/// ```
final class DatabaseLock: Sendable {
    /// The lock file's descriptor; -1 when none could be opened (see `init`).
    private let descriptor: Int32

    /// Locks the library at `database` (symlinks resolved, so two paths to one file share the lock).
    ///
    /// Throws `DaemonError.libraryInUse` when another process holds the lock. When the lock file can't be created
    /// or opened (a read-only folder or mount that never held one, no permission), it logs why and runs unlocked:
    /// such a library can't be written by this daemon either, and refusing would stop playback for nothing.
    init(database: String, bus: String, logger: Logger) throws {
        let folder = (database as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let database = Self.canonical(database) ?? Self.canonical(folder).map { $0 + "/" + (database as NSString).lastPathComponent } ?? database
        let path = database + ".lock"
        var fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        let openError = errno
        let writable = fd >= 0
        if fd < 0, openError == EACCES || openError == EROFS || openError == EPERM {
            fd = open(path, O_RDONLY | O_CLOEXEC)  // one left by an earlier run still locks, read-only
        }
        guard fd >= 0 else {
            Self.warnUnlocked(path, openError, logger)
            descriptor = -1
            return
        }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            let holder = Self.holder(fd)
            close(fd)
            guard code == EWOULDBLOCK else {
                Self.warnUnlocked(path, code, logger)
                descriptor = -1
                return
            }
            throw DaemonError.libraryInUse(database, holder: holder)
        }
        if writable {
            // Over the previous holder's text, then cut to length: truncating to 0 first frees the file's block,
            // which ext4 journals (1.5-5 ms measured here, on the way to the bus name).
            let holder = Array("pid \(getpid()), \(bus)".utf8)
            if holder.withUnsafeBytes({ pwrite(fd, $0.baseAddress, $0.count, 0) }) == holder.count {
                _ = ftruncate(fd, off_t(holder.count))
            }
        }
        descriptor = fd
    }

    /// Gives the lock up (also done by the kernel when the process ends).
    func release() {
        if descriptor >= 0 { close(descriptor) }
    }

    private static func warnUnlocked(_ path: String, _ code: Int32, _ logger: Logger) {
        logger.warning("cannot lock the library: another lecternd, on another bus, could open it too",
                       metadata: ["lock": "\(path)", "error": "\(String(cString: strerror(code)))"])
    }

    /// Who holds the lock on the file open at `fd`: its pid from /proc/locks, with the bus it wrote in the file
    /// when the file names the same pid (a holder that could only open the file read-only left an older one's).
    private static func holder(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        let written = String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        var info = stat()
        guard fstat(fd, &info) == 0, let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else {
            return written.isEmpty ? "another process" : written
        }
        // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF": type, pid, device:inode.
        let inode = ":\(info.st_ino)"
        for line in locks.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 5, fields[1] == "FLOCK", fields[5].hasSuffix(inode) else { continue }
            let pid = fields[4]
            return written.hasPrefix("pid \(pid),") ? written : "pid \(pid)"
        }
        return written.isEmpty ? "another process" : written
    }

    /// `path` with symlinks resolved, nil when it doesn't exist.
    private static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

extension DaemonOptions {
    /// The bus, as the library's lock file names its holder's.
    var busDescription: String {
        if let busAddress { return "bus \(busAddress)" }
        let session = ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"] ?? ""
        return session.isEmpty ? "the session bus" : "session bus \(session)"
    }
}
