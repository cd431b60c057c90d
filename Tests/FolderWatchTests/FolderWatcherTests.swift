import FolderWatch
import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// inotify on real folders: a book copied in is one change once its files are written, a re-tag or a rename is its
/// folder's change, a burst is a few changes, the watch limit and symbolic-link loops are held to, a root that goes
/// away (deleted, not there yet, or an unmounted disk) and a disk or bind mount unmounted inside a root are reported
/// and watched again when they are back.
@Suite struct FolderWatcherTests {
    /// The changes a watcher reported, read as they come (ending the iteration of an AsyncStream ends the stream).
    final class Received: Sendable {
        private let changes = Mutex<(all: [FolderWatcher.Change], read: Int)>(([], 0))

        init(_ watcher: FolderWatcher) {
            Task { [self] in
                for await change in watcher.changes { self.changes.withLock { $0.all.append(change) } }
            }
        }

        /// The folders of every change that comes until none has come for `quiet` (a machine that stalls longer than
        /// the watcher's quiet period mid-change splits one change in two: the folders are the same).
        func settled(quiet: Duration = .seconds(3)) async -> [String] {
            var folders: Set<String> = []
            var changes = await next(1)
            while !changes.isEmpty {
                for case .settled(let settled) in changes { folders.formUnion(settled) }
                changes = await next(1, timeout: quiet)
            }
            // Of a change split in two, the outer folder stands for both, as the watcher says them.
            return folders.filter { folder in !folders.contains { folder.hasPrefix($0 + "/") } }.sorted()
        }

        /// The next `count` changes not read yet, or fewer when `timeout` passes first.
        func next(_ count: Int, timeout: Duration = .seconds(10)) async -> [FolderWatcher.Change] {
            let deadline = ContinuousClock.now + timeout
            while changes.withLock({ $0.all.count - $0.read }) < count && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(20))
            }
            return changes.withLock { state in
                let taken = Array(state.all[state.read..<min(state.all.count, state.read + count)])
                state.read += taken.count
                return taken
            }
        }
    }

    private func write(_ path: String, _ text: String = "audio") throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }

    @Test func aBookCopiedInIsOneChangeOfItsFolderOnceItsFilesAreWritten() async throws {
        let root = try TemporaryDirectory(prefix: "lectern-watch")
        defer { root.remove() }
        let library = root.appending("Library").path
        try FileManager.default.createDirectory(atPath: library + "/Old Book", withIntermediateDirectories: true)
        let watcher = try #require(FolderWatcher(roots: [library], quiet: .seconds(1)))
        defer { watcher.stop() }
        let received = Received(watcher)
        #expect(watcher.watchCount == 2)

        // Written over a second, a file every 100 ms: never quiet for a second until the last.
        for n in 1...10 {
            try write(library + "/Author/New Book/\(n).mp3")
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(await received.settled() == [library + "/Author"])
        #expect(watcher.watchCount == 4, "Author and New Book are watched now")

        // Re-tagged (written in place), then renamed: the book's folder.
        try write(library + "/Author/New Book/3.mp3", "re-tagged")
        #expect(await received.settled() == [library + "/Author/New Book"])
        try FileManager.default.moveItem(atPath: library + "/Author/New Book/3.mp3", toPath: library + "/Author/New Book/03.mp3")
        #expect(await received.settled() == [library + "/Author/New Book"])

        // Moved out of the library: the folder that went; moved back in, the one that came.
        try FileManager.default.moveItem(atPath: library + "/Old Book", toPath: root.appending("Elsewhere").path)
        #expect(await received.settled() == [library + "/Old Book"])
        try FileManager.default.moveItem(atPath: root.appending("Elsewhere").path, toPath: library + "/Old Book Again")
        #expect(await received.settled() == [library + "/Old Book Again"])
        try write(library + "/Old Book Again/1.mp3")
        #expect(await received.settled() == [library + "/Old Book Again"], "the moved-in folder is watched")
    }

    @Test func aBurstOfAThousandFilesIsAFewChanges() async throws {
        let root = try TemporaryDirectory(prefix: "lectern-watch")
        defer { root.remove() }
        let watcher = try #require(FolderWatcher(roots: [root.path], quiet: .milliseconds(500)))
        defer { watcher.stop() }
        let received = Received(watcher)
        for book in 1...10 {
            for file in 1...100 { try write(root.path + "/Book \(book)/\(file).mp3") }
        }
        // Every book, in a few changes (one unless the machine stalls half a second mid-burst, as a loaded CI machine
        // may), then nothing: not a change per file.
        var changes = await received.next(1)
        while true {
            let more = await received.next(1, timeout: .seconds(2))
            if more.isEmpty { break }
            changes += more
        }
        let folders = changes.flatMap { change -> [String] in
            if case .settled(let folders) = change { return folders }
            return ["not a settled change: \(change)"]
        }
        #expect(Set(folders) == Set((1...10).map { root.path + "/Book \($0)" }), "\(changes)")
        #expect((1...10).contains(changes.count), "\(changes.count) changes for 1,000 files")
    }

    @Test func theWatchLimitAndLinkLoopsAreHeldTo() async throws {
        let root = try TemporaryDirectory(prefix: "lectern-watch")
        defer { root.remove() }
        for name in ["a", "b", "c", "d"] { try FileManager.default.createDirectory(atPath: root.path + "/" + name, withIntermediateDirectories: true) }
        // A link back to the root: followed, it would never end.
        try FileManager.default.createSymbolicLink(atPath: root.path + "/a/loop", withDestinationPath: root.path)
        let watcher = try #require(FolderWatcher(roots: [root.path], quiet: .milliseconds(200), watchLimit: 3))
        defer { watcher.stop() }
        let received = Received(watcher)
        #expect(watcher.watchCount == 3)
        #expect(await received.next(1) == [.unwatched([root.path + "/c", root.path + "/d"])])

        let unlimited = try #require(FolderWatcher(roots: [root.path], quiet: .milliseconds(200)))
        defer { unlimited.stop() }
        #expect(unlimited.watchCount == 5, "the root and its four folders; not through the link")
    }

    @Test func aRootDeletedIsGoneAndBackWhenItIsThereAgain() async throws {
        let root = try TemporaryDirectory(prefix: "lectern-watch")
        defer { root.remove() }
        let library = root.appending("Library").path
        try write(library + "/Book/1.mp3")
        let watcher = try #require(FolderWatcher(roots: [library], quiet: .milliseconds(200), rootCheck: .milliseconds(200)))
        defer { watcher.stop() }
        let received = Received(watcher)
        try FileManager.default.removeItem(atPath: library)
        let gone = await received.next(1)
        #expect(gone == [.gone(library)], "\(gone)")
        try write(library + "/Book/1.mp3")
        #expect(await received.next(1) == [.back(library)])
        try write(library + "/Book/2.mp3")
        #expect(await received.next(1) == [.settled([library + "/Book"])])
    }

    @Test func aDiskUnmountedUnderTheLibraryIsGoneAndBackWhenMounted() async throws {
        let root = try TemporaryDirectory(prefix: "lectern-watch")
        defer { root.remove() }
        let disk = root.appending("disk").path
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        try #require(mount("none", disk, "tmpfs", 0, nil) == 0, "mount tmpfs: \(String(cString: strerror(errno)))")
        defer { umount2(disk, Int32(MNT_DETACH)) }
        try write(disk + "/Book/1.mp3")
        let watcher = try #require(FolderWatcher(roots: [disk], quiet: .milliseconds(200), rootCheck: .milliseconds(200)))
        defer { watcher.stop() }
        let received = Received(watcher)
        // The watcher reads the folder now and then (its walk, its look for roots gone): while it has it open the
        // disk is busy, as it would be for a user's umount. Up to a second of tries.
        var unmounted = umount(disk)
        for _ in 0..<20 where unmounted != 0 && errno == EBUSY {
            try await Task.sleep(for: .milliseconds(50))
            unmounted = umount(disk)
        }
        #expect(unmounted == 0, "umount: \(String(cString: strerror(errno)))")
        #expect(await received.next(1) == [.gone(disk)])
        // The empty folder the disk was mounted on is not the library: not back until the disk is.
        #expect(await received.next(1, timeout: .seconds(1)).isEmpty)
        try #require(mount("none", disk, "tmpfs", 0, nil) == 0)
        #expect(await received.next(1) == [.back(disk)])
        try write(disk + "/Book/1.mp3")
        #expect(await received.next(1) == [.settled([disk + "/Book"])], "the disk mounted again is watched")
    }

    @Test func aRootNotThereYetIsGoneUntilItIs() async throws {
        let root = try TemporaryDirectory(prefix: "lectern-watch")
        defer { root.remove() }
        let library = root.appending("Library").path
        let watcher = try #require(FolderWatcher(roots: [library], quiet: .milliseconds(200), rootCheck: .milliseconds(200)))
        defer { watcher.stop() }
        let received = Received(watcher)
        #expect(await received.next(1) == [.gone(library)])
        try write(library + "/Book/1.mp3")
        #expect(await received.next(1) == [.back(library)])
    }

    /// A tmpfs and a bind mount on folders inside the library: what went is that folder, not the library; the rest of
    /// the library is still watched.
    @Test(arguments: ["tmpfs", "bind"])
    func aMountInsideTheLibraryIsGoneAndBackAlone(kind: String) async throws {
        let root = try TemporaryDirectory(prefix: "lectern-watch")
        defer { root.remove() }
        let library = root.appending("Library").path
        let disk = library + "/Disk"
        let source = root.appending("Source").path
        for folder in [disk, source, library + "/Home Book"] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        func mountDisk() -> Int32 {
            kind == "tmpfs" ? mount("none", disk, "tmpfs", 0, nil) : mount(source, disk, nil, UInt(MS_BIND), nil)
        }
        try #require(mountDisk() == 0, "mount \(kind): \(String(cString: strerror(errno)))")
        defer { umount2(disk, Int32(MNT_DETACH)) }
        try write(disk + "/Book/1.mp3")
        let watcher = try #require(FolderWatcher(roots: [library], quiet: .milliseconds(200), rootCheck: .milliseconds(200)))
        defer { watcher.stop() }
        let received = Received(watcher)
        #expect(umount(disk) == 0)
        #expect(await received.next(1) == [.gone(disk)])
        try write(library + "/Home Book/1.mp3")
        #expect(await received.next(1) == [.settled([library + "/Home Book"])], "the rest of the library is watched")
        #expect(await received.next(1, timeout: .seconds(1)).isEmpty, "not back while nothing is mounted there")
        try #require(mountDisk() == 0)
        #expect(await received.next(1) == [.back(disk)])
        try write(disk + "/Book/2.mp3")
        #expect(await received.next(1) == [.settled([disk + "/Book"])], "the disk mounted again is watched")
    }
}
