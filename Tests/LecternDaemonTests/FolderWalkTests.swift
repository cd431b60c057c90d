import DBus
import Foundation
import Testing
import TestSupport
@testable import LecternDaemon

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
        let tooMany = #expect(throws: BusError.self) {
            try MediaOpener.audioFiles(in: folder, limits: .init(depth: 6, entries: 100, files: 10))
        }
        #expect(tooMany?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(tooMany?.message.contains("too much to open as one queue") == true, "\(String(describing: tooMany))")
        #expect(throws: BusError.self) { try MediaOpener.audioFiles(in: folder, limits: .init(depth: 6, entries: 5, files: 100)) }
    }

    @Test func theRootOfTheFileSystemIsRefused() throws {
        #expect(throws: BusError.self) { try MediaOpener.audioFiles(in: URL(fileURLWithPath: "/")) }
    }
}
