import FolderWatch
import Foundation
import LecternConfiguration
import LecternLibrary
import Logging
import Threads

/// The configuration's library folders, kept in step with the disk (docs/decisions/watched-folders.md).
///
/// - At start (and for a folder a reload adds) each library folder is imported again in the background: what changed
///   while lecternd was stopped is read (unchanged files are skipped by their size and modification time).
/// - Watched (``FolderWatcher``): a folder that changed and has been quiet since (a book copied in, a file re-tagged
///   or renamed) is imported again, one folder at a time, announced as a client's import is (ImportProgress,
///   ImportFinished, BookChanged). A change inside a book's folder (one disc's folder of several) is imported as the
///   whole book's folder.
/// - A file no longer on disk is marked missing, never deleted (its bookmarks and the position in it stay); it is
///   present again when an import finds it, at its path or by its fingerprint elsewhere.
/// - A book whose library folder is gone, or whose mount (``Book/mountPath``) is not mounted, is offline: its files
///   are not marked missing, nothing of it changes, and it is available again when they are back (then imported
///   again).
/// - Folders beyond the watch limit are imported again every ``WatchOptions/fallbackScan``, and the mounts of the
///   offline books looked at then too (no timer while there are neither).
/// - A folder is underway (``ImportJobs/underway``) from when its import is queued until it is done: a book with
///   files not on disk activated meanwhile waits for it (``BookSession/activation(of:play:)``).
public actor LibraryFolders {
    private let library: Library
    private let writer: LibraryWriter
    private let imports: ImportJobs
    /// Told each import's progress and end, as a client's import is announced.
    private let importEvents: @Sendable (ImportJobs.Event) async -> Void
    /// Told the books that went missing, offline or available again.
    private let availabilityChanged: @Sendable ([Int64]) async -> Void
    private let options: WatchOptions
    private let logger: Logger
    private var watcher: FolderWatcher?
    private var forwarding: Task<Void, Never>?
    private var folders: [String] = []
    /// Library folders and mounts inside them the watcher says are gone.
    private var gone: Set<String> = []
    /// Folders beyond the watch limit.
    private var unwatched: Set<String> = []
    /// Whether some book is offline (as last seen).
    private var someOffline = false
    /// Whether ``watch(_:)`` was called: the first call looks at the books' mounts even without library folders.
    private var started = false
    /// Counts the calls of ``watch(_:)``: one that a later call overtook while its watcher was being made lets it go.
    private var watchCalls = 0
    /// Asks for a fallback scan every ``WatchOptions/fallbackScan`` while there is something for it: folders beyond
    /// the watch limit, or offline books (no timer otherwise).
    private var fallbackTicks: Task<Void, Never>?

    private enum Work {
        case change(FolderWatcher.Change)
        case rescan([String], because: String)
        case fallbackScan
    }

    /// What ``run()`` does, in turn: the watcher's changes, rescans, the fallback scan; each with the folders it may
    /// import, underway (``ImportJobs/underway``) from when it is queued until it is done (``queue(_:roots:)``).
    private let work = AsyncStream.makeStream(of: (work: Work, folders: [String]).self)

    public init(library: Library, writer: LibraryWriter, imports: ImportJobs, options: WatchOptions, logger: Logger,
                importEvents: @escaping @Sendable (ImportJobs.Event) async -> Void,
                availabilityChanged: @escaping @Sendable ([Int64]) async -> Void) {
        self.library = library
        self.writer = writer
        self.imports = imports
        self.importEvents = importEvents
        self.availabilityChanged = availabilityChanged
        self.options = options
        self.logger = logger
    }

    /// Watches `folders` from now on (none: nothing), in place of those watched before; those not watched before
    /// are imported again (in ``run()``, after what is queued). The first call also marks offline the books whose
    /// mount is not there, wherever they are.
    public func watch(_ folders: [String]) async {
        watchCalls += 1
        let call = watchCalls
        // The watcher walks the folders' trees as it starts, a watch per folder: on a thread for file-system work,
        // not on this actor's (the cooperative pool's). Another call may come meanwhile: the later one wins.
        var made: FolderWatcher?
        if !folders.isEmpty {
            let options = options
            made = await ThreadPool.fileSystem.run {
                FolderWatcher(roots: folders, watchLimit: options.watchLimit, rootCheck: options.rootCheck)
            }
        }
        guard call == watchCalls else {
            made?.stop()
            return
        }
        watcher?.stop()
        forwarding?.cancel()
        let added = folders.filter { !self.folders.contains($0) }
        self.folders = folders
        gone = []
        unwatched = []
        watcher = made
        if !folders.isEmpty && watcher == nil {
            logger.warning("the library folders cannot be watched: no inotify instance left", metadata: ["folders": "\(folders)"])
        }
        if !added.isEmpty || !started { queue(.rescan(added, because: "it may have changed since it was last read"), roots: folders) }
        started = true
        if let watcher {
            forwarding = Task { [self, folders] in
                for await change in watcher.changes { queue(.change(change), roots: folders) }
            }
        }
    }

    /// Queues `item` for ``run()``: the folders it may import (every library folder, `roots`, for an overflow or a
    /// fallback scan) are underway until it is done, and an activation of a book in them waits for it.
    private nonisolated func queue(_ item: Work, roots: [String]) {
        let folders: [String] = switch item {
        case .rescan(let folders, _), .change(.settled(let folders)): folders
        case .change(.back(let folder)): [folder]
        case .change(.overflowed), .fallbackScan: roots
        case .change(.gone), .change(.unwatched): []
        }
        imports.underway.begin(folders)
        work.continuation.yield((item, folders))
    }

    /// Handles the changes of the folders watched, the rescans and the fallback scans, until cancelled.
    public func run() async {
        for await (item, folders) in work.stream {
            if Task.isCancelled { break }
            await handle(item)
            imports.underway.end(folders)
            updateFallbackTicks()
        }
        fallbackTicks?.cancel()
    }

    private func updateFallbackTicks() {
        let needed = !unwatched.isEmpty || someOffline
        if needed && fallbackTicks == nil {
            fallbackTicks = Task { [self, options, folders] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: options.fallbackScan)
                    queue(.fallbackScan, roots: folders)
                }
            }
        } else if !needed {
            fallbackTicks?.cancel()
            fallbackTicks = nil
        }
    }

    private func handle(_ item: Work) async {
        switch item {
        case .change(let change):
            await handle(change)
        case .rescan(let roots, let reason):
            await refreshOffline()
            for root in roots where await Self.exists(root) {
                await importAgain(root, because: reason)
            }
        case .fallbackScan:
            let cameBack = await refreshOffline()
            for folder in await bookFolders(unwatched.union(cameBack)) where await Self.exists(folder) {
                await importAgain(folder, because: cameBack.contains(folder) ? "its disk is back" : "it is beyond the watch limit")
            }
        }
    }

    private func handle(_ change: FolderWatcher.Change) async {
        switch change {
        case .settled(let folders):
            for folder in await bookFolders(Set(folders)) {
                if await Self.exists(folder) {
                    await importAgain(folder, because: "it changed")
                } else {
                    logger.info("a watched folder was removed or moved away: its files are missing", metadata: ["folder": "\(folder)"])
                    await markMissing(under: folder)
                }
            }
        case .back(let folder):
            gone.remove(folder)
            logger.notice("a library folder is back", metadata: ["folder": "\(folder)"])
            await refreshOffline()
            await importAgain(folder, because: "it is back")
        case .gone(let folder):
            gone.insert(folder)
            logger.warning("a library folder went away (unmounted, deleted or moved): its books are offline",
                           metadata: ["folder": "\(folder)"])
            await refreshOffline()
        case .unwatched(let folders):
            unwatched.formUnion(folders)
            logger.warning("too many folders to watch: these are scanned every \(options.fallbackScan) instead",
                           metadata: ["count": "\(folders.count)", "first": "\(folders.first ?? "")"])
        case .overflowed:
            for root in folders { await importAgain(root, because: "changes were too many to follow") }
        }
    }

    /// `folders`, each as the folder of the book it is in, if any (a change inside a book's folder, one disc of
    /// several, is read as the whole book's: the disc's alone would be a book of its own), the outermost.
    private func bookFolders(_ folders: Set<String>) async -> [String] {
        FolderWatcher.outermost(await library.reading { library in
            Set(folders.map { folder in (try? library.bookFolder(enclosing: folder)).flatMap { $0 } ?? folder })
        })
    }

    /// Whether `path` is there: a stat, on a thread for file-system work (a library folder may be on a slow disk or a
    /// network share), not on this actor's.
    private static func exists(_ path: String) async -> Bool {
        await ThreadPool.fileSystem.run { FileManager.default.fileExists(atPath: path) }
    }

    /// Imports `folder` again, then marks missing what of it is no longer on disk (the import marks the files of
    /// the books it finds; a book none of whose files it finds is marked here).
    private func importAgain(_ folder: String, because reason: String) async {
        logger.info("importing a library folder again", metadata: ["folder": "\(folder)", "why": "\(reason)"])
        do {
            try await imports.importNow(path: folder, shelfPath: "", emptyIsFine: true, events: importEvents)
        } catch {
            logger.warning("a library folder could not be imported", metadata: ["folder": "\(folder)", "error": "\(error)"])
        }
        await markMissing(under: folder)
    }

    private func markMissing(under folder: String) async {
        do {
            // A read and a stat of each of its files: on a thread for file-system work.
            let files = try await ThreadPool.fileSystem.run { [library] in try library.filesGone(under: folder) }
            let books = try await writer.write { try $0.markMissing(files) }
            if !books.isEmpty {
                logger.notice("files no longer on disk are missing", metadata: ["folder": "\(folder)", "books": "\(books)"])
                await availabilityChanged(books)
            }
        } catch {
            logger.warning("files no longer on disk could not be marked missing", metadata: ["folder": "\(folder)", "error": "\(error)"])
        }
    }

    /// Marks offline the books whose library folder or mount is gone, and available again those whose are back;
    /// the folders of the books back (to import again).
    @discardableResult
    private func refreshOffline() async -> Set<String> {
        let (mounts, missing) = await ThreadPool.fileSystem.run { [folders] in
            (Mounts.current(), folders.filter { !FileManager.default.fileExists(atPath: $0) })
        }
        let goneFolders = gone.union(missing)
        func isOffline(_ place: BookPlace) -> Bool {
            if let mount = place.mountPath, !mounts.isMounted(mount) { return true }
            guard let source = place.sourcePath else { return false }
            return goneFolders.contains { source == $0 || source.hasPrefix($0 + "/") }
        }
        do {
            let places = try await library.reading { try $0.bookPlaces() }
            let nowOffline = places.filter { !$0.offline && isOffline($0) }
            let back = places.filter { $0.offline && !isOffline($0) }
            someOffline = places.count(where: \.offline) - back.count + nowOffline.count > 0
            let changed = try await writer.write { library in
                try library.setOffline(nowOffline.map(\.id), true) + library.setOffline(back.map(\.id), false)
            }
            if !nowOffline.isEmpty { logger.notice("books offline", metadata: ["books": "\(nowOffline.map(\.id))"]) }
            if !back.isEmpty { logger.notice("books available again", metadata: ["books": "\(back.map(\.id))"]) }
            if !changed.isEmpty { await availabilityChanged(changed) }
            return Set(back.compactMap(\.sourcePath).filter { source in folders.contains { source == $0 || source.hasPrefix($0 + "/") } })
        } catch {
            logger.warning("the books' state could not be updated", metadata: ["error": "\(error)"])
            return []
        }
    }
}
