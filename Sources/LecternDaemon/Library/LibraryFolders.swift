import FolderWatch
import Foundation
import Logging

/// The configuration's library folders, watched (``FolderWatcher``): a folder that changed and has been quiet
/// since (a book copied in, a file re-tagged or renamed) is imported again, one folder at a time, announced as a
/// client's import is (ImportProgress, ImportFinished, BookChanged). A change inside a book's folder (one disc's
/// folder of several) is imported as the whole book's folder: a file removed there is marked unavailable in its
/// book. A library folder that comes back (a disk mounted again) is imported again; one the kernel's queue lost
/// events of is imported whole.
///
/// A whole book's folder removed, a library folder gone, and folders beyond the watch limit are logged: their books
/// are not touched (a book keeps its place and bookmarks when its files go; `lectern import` reads a folder again).
actor LibraryFolders {
    private let service: LibraryService
    private let logger: Logger
    private var watcher: FolderWatcher?
    private var folders: [String] = []
    /// The watchers in turn: ``run()`` follows the latest.
    private let watchers = AsyncStream.makeStream(of: FolderWatcher?.self, bufferingPolicy: .bufferingNewest(1))

    init(service: LibraryService, logger: Logger) {
        self.service = service
        self.logger = logger
    }

    /// Watches `folders` from now on (none: nothing), in place of those watched before.
    func watch(_ folders: [String]) {
        watcher?.stop()
        self.folders = folders
        watcher = folders.isEmpty ? nil : FolderWatcher(roots: folders)
        if !folders.isEmpty && watcher == nil {
            logger.warning("the library folders cannot be watched: no inotify instance left", metadata: ["folders": "\(folders)"])
        }
        watchers.continuation.yield(watcher)
    }

    /// Handles the changes of the folders watched, until cancelled.
    func run() async {
        for await watcher in watchers.stream {
            guard let watcher else { continue }
            for await change in watcher.changes { await handle(change) }
        }
    }

    private func handle(_ change: FolderWatcher.Change) async {
        switch change {
        case .settled(let folders):
            // A change inside a book's folder (one disc of several) is read as the whole book's.
            let changed = folders.map { folder in (try? service.library.bookFolder(enclosing: folder)).flatMap { $0 } ?? folder }
            for folder in FolderWatcher.outermost(Set(changed)) {
                guard FileManager.default.fileExists(atPath: folder) else {
                    logger.info("a watched folder was removed or moved away; its books keep their place", metadata: ["folder": "\(folder)"])
                    continue
                }
                await importAgain(folder, because: "it changed")
            }
        case .rootBack(let root):
            await importAgain(root, because: "it is back")
        case .rootGone(let root):
            logger.warning("a library folder went away (unmounted, deleted or moved); its books keep their place",
                           metadata: ["folder": "\(root)"])
        case .unwatched(let folders):
            logger.warning("too many folders to watch: these are read only by `lectern import`",
                           metadata: ["count": "\(folders.count)", "first": "\(folders.first ?? "")"])
        case .overflowed:
            for root in folders {
                await importAgain(root, because: "changes were too many to follow")
            }
        }
    }

    private func importAgain(_ folder: String, because reason: String) async {
        logger.info("importing a library folder again", metadata: ["folder": "\(folder)", "why": "\(reason)"])
        do {
            try await service.importChanged(folder)
        } catch {
            logger.warning("a library folder could not be imported", metadata: ["folder": "\(folder)", "error": "\(error)"])
        }
    }
}
