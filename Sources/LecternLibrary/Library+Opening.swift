import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

// Opening the database file: the configuration every connection gets, the check of every page, the migrations, and
// the recovery from a corrupt file (moved aside, never deleted) or one that can't be written (opened read-only).
extension Library {
    /// A database file as ``init(path:)`` found it.
    struct OpenedFile {
        let writer: any DatabaseWriter
        /// Where a corrupt file at the path went.
        let movedAside: String?
        let isReadOnly: Bool
    }

    /// Opens (creating and migrating) the database at `path`, moving a corrupt file aside and falling back to
    /// read-only for a file that can't be written. See ``init(path:)``.
    static func openFile(at path: String) throws -> OpenedFile {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        var aside: String? = nil
        var readOnly = false
        let opened: any DatabaseWriter
        do {
            if Self.cannotWrite(path, directory) {
                readOnly = true
                opened = try Self.openReadOnly(path)
            } else {
                opened = try Self.open(path)
            }
        } catch let error as DatabaseError where Self.isCorrupt(error) && !readOnly {
            aside = try Self.moveAside(path)
            opened = try Self.open(path)
        } catch let error as DatabaseError where Self.isWriteFailure(error) && !readOnly
                                                  && FileManager.default.fileExists(atPath: path) {
            // The checks above said writable, SQLite says otherwise (e.g. a read-only file system).
            readOnly = true
            opened = try Self.openReadOnly(path)
        } catch let error as DatabaseError {
            throw Self.translate(error)
        }
        return OpenedFile(writer: opened, movedAside: aside, isReadOnly: readOnly)
    }

    static func configuration(readOnly: Bool = false) -> Configuration {
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(5)
        config.readonly = readOnly
        config.prepareDatabase { db in
            db.add(function: Folding.function)
            try Library.addTierFunction(db)
            // The writer's savepoints and statements journal the pages they change (to undo them alone) in memory,
            // not in a temporary file once past 64 KiB: an import's book, in a savepoint of its own, changes about
            // 20 pages. Readers write nothing.
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA temp_store = MEMORY") }
        }
        return config
    }

    private static func open(_ path: String) throws -> DatabasePool {
        let pool = try DatabasePool(path: path, configuration: configuration())
        do {
            // Every page, now: a file whose header and schema are sound but a page in the middle is not is found
            // at start-up rather than by the query that reaches that page. ~1 s per 100 MB (lectern-bench's library run
            // times it).
            try pool.read { db in try Self.quickCheck(db) }
            try Schema.migrator.migrate(pool)
        } catch {
            try? pool.close()
            throw error
        }
        return pool
    }

    /// Opens a file that can't be written: plainly (SQLite reads a WAL file read-only when its -shm can be made
    /// or exists), else as immutable (a read-only directory: nothing can change it while we read).
    private static func openReadOnly(_ path: String) throws -> DatabaseQueue {
        func plain() throws -> DatabaseQueue {
            let queue = try DatabaseQueue(path: path, configuration: configuration(readOnly: true))
            try queue.read { db in _ = try Row.fetchAll(db, sql: "SELECT name FROM sqlite_master") }
            return queue
        }
        let queue: DatabaseQueue
        do {
            queue = try plain()
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CANTOPEN {
            queue = try DatabaseQueue(path: URL(fileURLWithPath: path).absoluteString + "?immutable=1",
                                      configuration: configuration(readOnly: true))
        }
        try queue.read { db in try Self.quickCheck(db) }
        return queue
    }

    /// Throws SQLITE_CORRUPT unless `PRAGMA quick_check` says "ok".
    private static func quickCheck(_ db: Database) throws {
        let report = try String.fetchAll(db, sql: "PRAGMA quick_check")
        guard report == ["ok"] else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "quick_check: " + report.prefix(3).joined(separator: "; "))
        }
    }

    static func isCorrupt(_ error: DatabaseError) -> Bool {
        error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
    }

    static func isWriteFailure(_ error: DatabaseError) -> Bool {
        [.SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_IOERR, .SQLITE_FULL].contains(error.resultCode)
    }

    /// An existing file that this process can't write, or whose directory it can't write (SQLite makes its
    /// -wal and -shm files there). `access` also answers for root: an immutable file or a read-only mount.
    private static func cannotWrite(_ path: String, _ directory: String) -> Bool {
        guard FileManager.default.fileExists(atPath: path) else { return false }
        return access(path, W_OK) != 0 || access(directory.isEmpty ? "." : directory, W_OK) != 0
    }

    /// Moves the corrupt file (and its -wal and -shm) to a name of its own; never over an existing file.
    private static func moveAside(_ path: String) throws -> String {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let base = path + ".corrupt-" + stamp
        let taken = { (name: String) in
            ["", "-wal", "-shm"].contains { FileManager.default.fileExists(atPath: name + $0) }
        }
        var aside = base
        var number = 2
        // link + unlink rather than rename: link refuses an existing name, so a race can't overwrite a kept file.
        while true {
            if !taken(aside) {
                if link(path, aside) == 0 { break }
                let code = errno
                // A file system without hard links (vfat): rename to the name just found free.
                if code == EPERM || code == EOPNOTSUPP, rename(path, aside) == 0 { return moveCompanions(path, aside) }
                guard code == EEXIST else {
                    throw LibraryError.unavailable("cannot move the corrupt library \(path) aside to \(aside): \(String(cString: strerror(code)))")
                }
            }
            aside = base + "-\(number)"
            number += 1
        }
        unlink(path)
        return moveCompanions(path, aside)
    }

    /// Moves the -wal and -shm of a file moved aside beside it; returns `aside`.
    private static func moveCompanions(_ path: String, _ aside: String) -> String {
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            if link(path + suffix, aside + suffix) == 0 { unlink(path + suffix) } else { rename(path + suffix, aside + suffix) }
        }
        return aside
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound, else SQLite's report (or its error).
    public func integrityCheck() throws -> String {
        do {
            return try database.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
        } catch let error as DatabaseError where Self.isCorrupt(error) {
            return error.message ?? "database disk image is malformed"
        } catch let error as DatabaseError {
            throw Self.translate(error)
        }
    }
}
