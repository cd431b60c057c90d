import Foundation
import Synchronization

/// The folders being imported, or queued to be by ``LibraryFolders``: an activation waits for those that may find
/// its book's files (``BookSession/activation(of:play:)``), as the start-up rescan finds a book moved while lecternd
/// was stopped.
///
/// ```swift
/// underway.begin(["/home/me/Audiobooks"])
/// defer { underway.end(["/home/me/Audiobooks"]) }
/// ```
public final class ImportsUnderway: Sendable {
    /// Each folder underway, with how many imports of it are (queued and running).
    private let folders = Mutex<[String: Int]>([:])

    /// An import of each of `folders` is queued or begins.
    func begin(_ folders: [String]) {
        self.folders.withLock { underway in
            for folder in folders.map(Self.standardized) { underway[folder, default: 0] += 1 }
        }
    }

    /// An import of each of `folders` (as given to ``begin(_:)``) is done.
    func end(_ folders: [String]) {
        self.folders.withLock { underway in
            for folder in folders.map(Self.standardized) {
                let count = (underway[folder] ?? 0) - 1
                underway[folder] = count > 0 ? count : nil
            }
        }
    }

    /// Whether an import underway may find one of `paths`: it is in a folder underway.
    func mayFind(any paths: [String]) -> Bool {
        folders.withLock { underway in
            paths.contains { path in underway.keys.contains { path == $0 || path.hasPrefix($0 == "/" ? $0 : $0 + "/") } }
        }
    }

    /// Returns once no import underway may find any of `paths` (true), or after `limit` (false). It looks every
    /// 50 ms: a wait is rare (an activation while an import of its book's folder runs) and short.
    func wait(for paths: [String], atMost limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while mayFind(any: paths) {
            guard ContinuousClock.now < deadline, !Task.isCancelled else { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return true
    }

    private static func standardized(_ folder: String) -> String { URL(fileURLWithPath: folder).standardizedFileURL.path }
}
