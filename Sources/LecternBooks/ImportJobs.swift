import Foundation
import LecternLibrary
import LecternMedia
import Logging
import Synchronization
import Threads

/// The imports started by Library1.Import: each is a numbered job that runs on its own, off the call queue (the
/// daemon keeps answering and playing), and reports its progress, at most every 100 ms, and its end.
///
/// ```swift
/// let job = try imports.start(path: "/home/me/Audiobooks", shelfPath: "") { event in announce(event) }
/// ```
public final class ImportJobs: Sendable {
    public enum Event: Sendable {
        case progress(job: UInt32, Importer.Progress)
        /// The books imported, or why the import failed (logged already), and what it left out either way.
        case finished(job: UInt32, Result<[Int64], any Error>, skipped: SkippedFiles)
    }

    private let library: Library
    private let importer: Importer
    private let logger: Logger
    /// The folders being imported: these jobs', and those ``LibraryFolders`` queued.
    public let underway = ImportsUnderway()
    /// The number of the next job (wrapping at 2³²).
    private let nextJob = Atomic<UInt32>(1)

    public init(library: Library, importer: Importer, logger: Logger) {
        self.library = library
        self.importer = importer
        self.logger = logger
    }

    /// Starts importing `path` (absolute; a folder or one file) onto `shelfPath` ("" for where the books are, or
    /// the top level) and returns the job's number; `events` hears of it from the job's task. Throws at once for a
    /// relative or missing path, or a library that can't be written.
    public func start(path: String, shelfPath: String, events: @escaping @Sendable (Event) async -> Void) async throws -> UInt32 {
        let (job, folder) = try await prepare(path)
        // The import runs on its own, off the call queue: the daemon keeps answering and playing.
        Task.detached(priority: .utility) { [self] in
            await run(job, folder, shelfPath: shelfPath, events: events)
        }
        return job
    }

    /// Imports `path` as ``start(path:shelfPath:events:)`` does, and returns when it is done, with the books imported
    /// or why it failed (told to `events` too). With `emptyIsFine` (a library folder imported again), a folder without
    /// audio files imports no book, and is no failure.
    @discardableResult
    public func importNow(path: String, shelfPath: String, emptyIsFine: Bool = false,
                          events: @escaping @Sendable (Event) async -> Void) async throws -> Result<[Int64], any Error> {
        let (job, folder) = try await prepare(path)
        return await run(job, folder, shelfPath: shelfPath, emptyIsFine: emptyIsFine, events: events)
    }

    /// Checks `path`, and makes it underway until ``run(_:_:shelfPath:emptyIsFine:events:)`` ends. The checks stat
    /// the database's file and `path`: on a thread for file-system work (a network share may take its time).
    private func prepare(_ path: String) async throws -> (job: UInt32, folder: URL) {
        guard path.hasPrefix("/") else { throw LibraryError.invalidArgument("the path to import must be absolute, not '\(path)'") }
        let folder = try await ThreadPool.fileSystem.run { [library] in
            try library.checkWritable()
            let folder = URL(fileURLWithPath: path).standardizedFileURL
            guard FileManager.default.fileExists(atPath: folder.path) else { throw LibraryError.notFound("no such file or folder: \(folder.path)") }
            return folder
        }
        underway.begin([folder.path])
        return (nextJob.wrappingAdd(1, ordering: .relaxed).oldValue, folder)
    }

    @discardableResult
    private func run(_ job: UInt32, _ folder: URL, shelfPath: String, emptyIsFine: Bool = false,
                     events: @escaping @Sendable (Event) async -> Void) async -> Result<[Int64], any Error> {
        defer { underway.end([folder.path]) }
        var lastReport = ContinuousClock.now - .seconds(1)
        var skipped = SkippedFiles()
        let result: Result<[Int64], any Error>
        do {
            result = .success(try await importer.run(folder, shelfPath: shelfPath.isEmpty ? nil : shelfPath, skipped: &skipped) { progress in
                let now = ContinuousClock.now
                guard now - lastReport >= .milliseconds(100) || progress.done == progress.total else { return }
                lastReport = now
                await events(.progress(job: job, progress))
            })
        } catch is Importer.NoAudioFiles where emptyIsFine {
            result = .success([])
        } catch {
            logger.warning("import failed", metadata: ["path": "\(folder.path)", "error": "\(error)"])
            result = .failure(error)
        }
        // One line per kind of what was left out, however many files: a folder of 100,000 of them logs a few lines.
        for (kind, entry) in skipped.all {
            logger.notice("an import left files out", metadata: ["folder": "\(folder.path)", "why": "\(kind.rawValue)",
                                                                 "count": "\(entry.count)", "examples": "\(entry.examples)"])
        }
        // Without this lecternd would stay at its peak after a big import (161 MB after 100,000 files, 42 trimmed).
        FreedMemory.giveBack()
        await events(.finished(job: job, result, skipped: skipped))
        return result
    }
}
