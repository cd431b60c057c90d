import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import LecternMedia

/// Opening a folder (OpenUri, Application.Open) walks it within bounds: a book's folder plays, the root of the file
/// system or a home folder is refused with a clear error instead of being walked.
@Suite struct FolderWalkTests {
    private func touch(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data([0]).write(to: URL(fileURLWithPath: path))
    }

    @Test func aBookFolderIsWalkedInNaturalOrderWithinTheDepthLimit() throws {
        let root = try TemporaryDirectory(prefix: "lectern-walk")
        defer { root.remove() }
        try touch(root.path + "/Book/CD 2/1.mp3")
        try touch(root.path + "/Book/CD 1/10.mp3")
        try touch(root.path + "/Book/CD 1/9.mp3")
        try touch(root.path + "/Book/cover.jpg")
        try touch(root.path + "/Book/a/b/c/deep.mp3")  // three folders below the book: beyond a depth of 2
        let files = try MediaOpener.audioFiles(in: URL(fileURLWithPath: root.path + "/Book"),
                                               limits: .init(depth: 2, entries: 100, files: 100))
        #expect(files.map { $0.path.replacingOccurrences(of: root.path + "/Book/", with: "") }
                == ["CD 1/9.mp3", "CD 1/10.mp3", "CD 2/1.mp3"])
    }

    @Test func aFolderHoldingTooMuchIsRefusedNotWalked() throws {
        let root = try TemporaryDirectory(prefix: "lectern-walk")
        defer { root.remove() }
        for n in 1...12 { try touch(root.path + "/Books/part \(n).ogg") }
        let folder = URL(fileURLWithPath: root.path + "/Books")
        #expect(try MediaOpener.audioFiles(in: folder, limits: .init(depth: 6, entries: 100, files: 12)).count == 12)
        let tooMany = #expect(throws: OpenError.self) {
            try MediaOpener.audioFiles(in: folder, limits: .init(depth: 6, entries: 100, files: 10))
        }
        #expect(tooMany?.kind == .invalid)
        #expect(tooMany?.message.contains("too much to read as one") == true, "\(String(describing: tooMany))")
        #expect(throws: OpenError.self) { try MediaOpener.audioFiles(in: folder, limits: .init(depth: 6, entries: 5, files: 100)) }
    }

    @Test func theRootOfTheFileSystemIsRefused() throws {
        #expect(throws: OpenError.self) { try MediaOpener.audioFiles(in: URL(fileURLWithPath: "/")) }
    }
}

/// What a walk leaves out is counted by kind, with the first few paths, and nothing it leaves out is opened.
@Suite struct FolderWalkSkipTests {
    private func write(_ path: String, bytes: Int = 1) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(repeating: 1, count: bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Creates a file whose name is `name`'s bytes, not UTF-8 (Latin-1 "é" is the single byte E9).
    private func writeRaw(in folder: String, _ name: [UInt8]) throws {
        let path = Array(folder.utf8) + [UInt8(ascii: "/")] + name + [0]
        let fd = path.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self),
                                                     O_CREAT | O_WRONLY | O_CLOEXEC, 0o644) }
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        _ = Glibc.write(fd, "ID3", 3)
        close(fd)
    }

    @Test func badEntriesAreCountedByKindAndTheBookIsFound() throws {
        let root = try TemporaryDirectory(prefix: "lectern-walk-bad")
        defer { root.remove() }
        let top = root.path + "/Shelf"
        try write(top + "/Book/01.mp3", bytes: 100)
        for n in 1...5 { try write(top + "/Empty/\(n).mp3", bytes: 0) }
        for n in 1...4 { try write(top + "/Notes/\(n).txt") }
        try write(top + "/.hidden/secret.mp3")
        try write(top + "/Book/._01.mp3")  // AppleDouble: hidden, not counted
        #expect(mkfifo(top + "/Book/fifo.mp3", 0o644) == 0)
        try FileManager.default.createSymbolicLink(atPath: top + "/Book/loop", withDestinationPath: top)
        try FileManager.default.createSymbolicLink(atPath: top + "/a", withDestinationPath: top + "/b")
        try FileManager.default.createSymbolicLink(atPath: top + "/b", withDestinationPath: top + "/a")
        try FileManager.default.createDirectory(atPath: top + "/Latin1", withIntermediateDirectories: true)
        try writeRaw(in: top + "/Latin1", Array("Les Mis".utf8) + [0xE9] + Array("rables.mp3".utf8))
        try write(top + "/1/2/3/deep.mp3")

        let walked = try FolderWalk.audioFiles(in: top, limits: .init(depth: 2, entries: 1000, files: 1000))
        #expect(walked.files == [top + "/Book/01.mp3"])
        let skipped = walked.skipped
        #expect(skipped[.empty]?.count == 5)
        #expect(skipped[.empty]?.examples.count == SkippedFiles.examplesKept)
        #expect(skipped[.empty]?.examples.allSatisfy { $0.hasPrefix(top + "/Empty/") } == true)
        #expect(skipped[.notAudio]?.count == 4)
        #expect(skipped[.special] == .init(count: 1, examples: [top + "/Book/fifo.mp3"]))
        #expect(skipped[.link]?.count == 3)
        #expect(skipped[.nameNotUTF8] == .init(count: 1, examples: [top + "/Latin1/Les Mis\\xE9rables.mp3"]))
        #expect(skipped[.tooDeep] == .init(count: 1, examples: [top + "/1/2/3/"]))
        #expect(skipped[.unreadable] == nil)
        #expect(skipped.all.map(\.kind) == [.notAudio, .empty, .special, .link, .tooDeep, .nameNotUTF8])
    }

    @Test func aNamedFileIsCheckedWithoutOpeningIt() throws {
        let root = try TemporaryDirectory(prefix: "lectern-walk-file")
        defer { root.remove() }
        try write(root.path + "/ok.mp3")
        try write(root.path + "/empty.mp3", bytes: 0)
        try write(root.path + "/notes.txt")
        #expect(mkfifo(root.path + "/fifo.mp3", 0o644) == 0)
        #expect(FolderWalk.reasonToSkip(file: root.path + "/ok.mp3") == nil)
        #expect(FolderWalk.reasonToSkip(file: root.path + "/empty.mp3") == .empty)
        #expect(FolderWalk.reasonToSkip(file: root.path + "/notes.txt") == .notAudio)
        #expect(FolderWalk.reasonToSkip(file: root.path + "/fifo.mp3") == .special)
        #expect(FolderWalk.reasonToSkip(file: root.path) == .notAudio)
        try FileManager.default.createSymbolicLink(atPath: root.path + "/gone.mp3", withDestinationPath: root.path + "/nothing.mp3")
        try FileManager.default.createSymbolicLink(atPath: root.path + "/loop.mp3", withDestinationPath: root.path + "/loop.mp3")
        try FileManager.default.createSymbolicLink(atPath: root.path + "/fine.mp3", withDestinationPath: root.path + "/ok.mp3")
        #expect(FolderWalk.reasonToSkip(file: root.path + "/gone.mp3") == .link)
        #expect(FolderWalk.reasonToSkip(file: root.path + "/loop.mp3") == .link)
        #expect(FolderWalk.reasonToSkip(file: root.path + "/fine.mp3") == nil)  // named by the user: followed
    }

    /// Root reads everything: the walk runs on a thread whose file-system user is `nobody` (setfsuid is per thread
    /// on Linux, and drops the capabilities that let root past permissions), as a daemon run by a user would.
    @Test func anUnreadableFolderAndFileAreReported() throws {
        let root = try TemporaryDirectory(prefix: "lectern-walk-perm")
        defer { root.remove() }
        let top = root.path + "/Shelf"
        try write(top + "/Book/01.mp3", bytes: 100)
        try write(top + "/Locked/01.mp3", bytes: 100)
        try write(top + "/Book/02.mp3", bytes: 100)
        for path in [root.path, top, top + "/Book"] { chmod(path, 0o755) }
        chmod(top + "/Book/01.mp3", 0o644)
        chmod(top + "/Book/02.mp3", 0o600)
        chmod(top + "/Locked", 0o700)
        let walked = try AsUser.nobody { try FolderWalk.audioFiles(in: top) }
        #expect(walked.files == [top + "/Book/01.mp3"])
        #expect(walked.skipped[.unreadable]?.count == 2)
        #expect(Set(walked.skipped[.unreadable]?.examples ?? []) == [top + "/Locked/", top + "/Book/02.mp3"])
        // The folder named itself unreadable: a clear error, not an empty walk.
        let refused = #expect(throws: OpenError.self) { try AsUser.nobody { try FolderWalk.audioFiles(in: top + "/Locked") } }
        #expect(refused?.message.contains("Cannot read the folder \(top)/Locked") == true, "\(String(describing: refused))")
    }
}
