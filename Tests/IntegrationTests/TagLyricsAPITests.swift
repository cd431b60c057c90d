import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Player {
    /// Lyrics in a file's tags (ID3 USLT and SYLT, Vorbis comments, MP4 ©lyr), written by mutagen: the text in MPRIS
    /// Metadata (xesam:asText), synced ones as lines on org.lectern.Player1, as an LRC file beside the file would give
    /// them; an LRC file beside it wins.
    @Suite struct TagLyricsAPI {
        static let words = "First line\nSecond line, “quoted”"
        /// Synced pieces: a line every 0.5 s from 0.5 s.
        static let synced = (0..<4).map { (milliseconds: 500 * ($0 + 1), text: "line \($0)") }

        /// A 3 s file of `kind` (its extension) in a new folder, its tags given `words`; made off the pool.
        static func file(_ kind: String, _ words: AudioFiles.TagWords, name: String = "tagged") async throws -> (TemporaryDirectory, URL) {
            try await offThePool { try makeFile(kind, words, name: name) }
        }

        private static func makeFile(_ kind: String, _ words: AudioFiles.TagWords, name: String) throws -> (TemporaryDirectory, URL) {
            let directory = try TemporaryDirectory(prefix: "lectern-tag-lyrics")
            let folder = directory.appending("book")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let file = folder.appendingPathComponent("\(name).\(kind)")
            switch kind {
            case "mp3": try AudioFiles.mp3(file, seconds: 3)
            case "m4b": try AudioFiles.m4b(file, seconds: 3)
            case "opus": try AudioFiles.gst("audiotestsrc num-buffers=130 ! audioconvert ! opusenc ! oggmux", to: file)
            default: try AudioFiles.ogg(file, seconds: 3)
            }
            try AudioFiles.tag(file, words)
            return (directory, file)
        }

        static let unsyncedCases: [String: (kind: String, words: AudioFiles.TagWords)] = [
            "ID3v2.4 USLT": ("mp3", .uslt(words)),
            "ID3v2.3 USLT": ("mp3", .uslt(words, id3v2_3: true)),
            "Vorbis LYRICS": ("ogg", .vorbisComment("LYRICS", words)),
            "Vorbis UNSYNCEDLYRICS": ("ogg", .vorbisComment("UNSYNCEDLYRICS", words)),
            "Opus LYRICS": ("opus", .vorbisComment("LYRICS", words)),
            "MP4 ©lyr": ("m4b", .mp4(words)),
        ]

        @Test(arguments: unsyncedCases.keys.sorted())
        func unsyncedLyricsInTagsAreTheText(_ name: String) async throws {
            let (kind, words) = try #require(Self.unsyncedCases[name])
            let (directory, file) = try await Self.file(kind, words)
            defer { directory.remove() }
            try await DaemonFixture.with { d in
                try await d.openPaused(file)
                #expect(try await d.metadata()["xesam:asText"] == .string(Self.words), "\(d.log)")
                #expect(try await d.listenProperty("LyricsLineIndex") == .int32(-1))
                #expect(try await d.listenProperty("LyricsNextLineStart") == .int64(-1), "not synced: no lines")
            }
        }

        /// An ID3 SYLT frame gives lines in step with the file, as an LRC file does; in ID3v2.3 and 2.4, opened by
        /// URI and activated again (its tags kept by the library).
        @Test(arguments: [false, true])
        func syncedLyricsInAnID3FrameGiveTheLines(_ id3v2_3: Bool) async throws {
            let (directory, file) = try await Self.file("mp3", .sylt(Self.synced, id3v2_3: id3v2_3))
            defer { directory.remove() }
            let text = Self.synced.map(\.text).joined(separator: "\n")
            try await DaemonFixture.with { d in
                try await d.openPaused(file)
                #expect(try await d.metadata()["xesam:asText"] == .string(text), "\(d.log)")
                #expect(try await d.listenProperty("LyricsNextLineStart") == .int64(500_000))
                let mark = d.signals.mark
                try await d.call("SetPosition", [.objectPath(try #require(try await d.trackID())), .int64(1_200_000)])
                let line = await d.signals.waitFor(since: mark) { $0.lyricsLine != nil }?.lyricsLine
                #expect(line?.index == 1)
                #expect(line?.text == "line 1")
                #expect(line?.next == 1_500_000)

                // Back at the start, and opened again from the library's copy of its tags.
                try await d.call("SetPosition", [.objectPath(try #require(try await d.trackID())), .int64(0)])
                _ = try await d.activateImported(file.deletingLastPathComponent())
                #expect(try await d.metadata()["xesam:asText"] == .string(text))
                #expect(try await d.listenProperty("LyricsNextLineStart") == .int64(500_000))
            }
        }

        /// Restarted, the daemon has a book's words from the library: its files' tags are not read again.
        @Test func aBookKeepsTheWordsOfItsTagsInTheLibrary() async throws {
            let (directory, file) = try await Self.file("ogg", .vorbisComment("LYRICS", Self.words))
            defer { directory.remove() }
            try await DaemonFixture.with { d in
                let book = try await d.activateImported(file.deletingLastPathComponent())
                #expect(try await d.metadata()["xesam:asText"] == .string(Self.words))
                #expect(await d.stopDaemon() == 0)
                // The tags now say something else: the library's copy is what the book plays with until an import.
                try await offThePool { try AudioFiles.tag(file, .vorbisComment("LYRICS", "changed")) }
                let again = try await d.startReplacementDaemon()
                #expect(try await d.waitForCurrentBook(book) == book)
                #expect(try await d.waitForURL(endingWith: file.lastPathComponent) != nil)
                #expect(try await d.metadata()["xesam:asText"] == .string(Self.words), "\(d.log)")
                #expect(await d.stopReplacement(again) == 0)
            }
        }

        @Test func anLRCFileBesideWinsOverTheTags() async throws {
            let (directory, file) = try await Self.file("mp3", .uslt(Self.words))
            defer { directory.remove() }
            try Data("[00:00.50]from the LRC file".utf8).write(to: file.deletingPathExtension().appendingPathExtension("lrc"))
            try await DaemonFixture.with { d in
                try await d.openPaused(file)
                #expect(try await d.metadata()["xesam:asText"] == .string("from the LRC file"))
                _ = try await d.activateImported(file.deletingLastPathComponent())
                #expect(try await d.metadata()["xesam:asText"] == .string("from the LRC file"))
                #expect(try await d.listenProperty("LyricsNextLineStart") == .int64(500_000))
            }
        }

        /// Words in tags that cannot be used give no text and a warning naming the file; the file plays.
        @Test(arguments: ["SYLT not UTF-8", "USLT too large", "LRC malformed", "SYLT cut short"])
        func badWordsInTagsGiveNoTextAndAWarning(_ kind: String) async throws {
            let words: AudioFiles.TagWords = switch kind {
            // UTF-8 (3), "eng", milliseconds (2), lyrics (1), no description; "caf\xE9", then its time.
            case "SYLT not UTF-8": .id3Frame("SYLT", [3] + Array("eng".utf8) + [2, 1, 0, 0x63, 0x61, 0x66, 0xE9, 0, 0, 0, 1, 0])
            case "SYLT cut short": .id3Frame("SYLT", [3] + Array("eng".utf8) + [2, 1, 0] + Array("line".utf8) + [0, 0, 0])
            case "USLT too large": .uslt(String(repeating: "a", count: 2 << 20))
            default: .uslt("[00:01.00]fine\n[00:99.00]not a time")
            }
            let (directory, file) = try await Self.file("mp3", words, name: "bad")
            defer { directory.remove() }
            try await DaemonFixture.with { d in
                try await d.openURI(file)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                #expect(try await d.metadata()["xesam:asText"] == nil)
                #expect(try await d.listenProperty("LyricsLineIndex") == .int32(-1))
                #expect(d.log.contains("cannot read the lyrics in a file's tags") && d.log.contains("bad.mp3"), "\(d.log)")
            }
        }
    }
}
