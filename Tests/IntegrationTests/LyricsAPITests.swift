import DBus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Two 4 s Ogg files, each with an LRC file beside it: a line every 0.5 s from 0.5 s ("one 0" … "one 6",
/// "two 0" … "two 6"), made once per test.
struct LyricsBook {
    let directory: TemporaryDirectory
    var folder: URL { directory.appending("book") }
    var files: [URL] { ["1.ogg", "2.ogg"].map { folder.appendingPathComponent($0) } }
    static let names = ["one", "two"]
    static let lineCount = 7

    init() throws {
        directory = try TemporaryDirectory(prefix: "lectern-lyrics")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (file, name) in zip(files, Self.names) {
            try AudioFiles.ogg(file, seconds: 4)
            let lines = (0..<Self.lineCount).map { (n: Int) -> String in
                let (seconds, hundredths) = ((n + 1) / 2, (n + 1) % 2 * 50)
                return "[00:0\(seconds).\(hundredths == 0 ? "00" : "50")]\(name) \(n)"
            }
            let lrc = "[ti:\(name)]\r\n" + lines.joined(separator: "\r\n")
            try Data(lrc.utf8).write(to: file.deletingPathExtension().appendingPathExtension("lrc"))
        }
    }

    static func text(_ name: String) -> String { (0..<lineCount).map { "\(name) \($0)" }.joined(separator: "\n") }
}

extension RecordedSignal {
    /// For a LyricsLineChanged: index, start, next start, text.
    var lyricsLine: (index: Int32, start: Int64, next: Int64, text: String)? {
        guard interface == Listen.interface, member == "LyricsLineChanged", arguments.count == 4,
              case .int32(let index) = arguments[0], let start = arguments[1].int64, let next = arguments[2].int64,
              let text = arguments[3].string else { return nil }
        return (index, start, next, text)
    }
}

/// The lyrics lines, seeks and files (xesam:url) signalled since `mark`, one a line: to tell what happened.
func trace(_ d: DaemonFixture, since mark: Int) -> String {
    var lines: [String] = []
    for signal in d.signals.since(mark) {
        if let line = signal.lyricsLine {
            lines.append("#\(signal.index) line \(line.index) \(line.start) \(line.next) \(line.text)")
        } else if let position = signal.seekedPosition {
            lines.append("#\(signal.index) Seeked \(position)")
        } else if let url = signal.playerChanges["Metadata"]?.stringKeyedDictionary?["xesam:url"]?.string {
            lines.append("#\(signal.index) url \(url)")
        }
    }
    return lines.joined(separator: "\n")
}

extension Integration.Player {
    /// Lyrics and transcripts: an LRC file beside a file gives its text (MPRIS xesam:asText) and its lines, one
    /// LyricsLineChanged at each, in step with playback.
    @Suite struct LyricsAPI {
        @Test func theTextIsInMetadataAndTheLineInPlayer1() async throws {
            let book = try await offThePool { try LyricsBook() }
            try await DaemonFixture.with { d in
                try await d.openPaused(book.folder)
                #expect(try await d.metadata()["xesam:asText"] == .string(LyricsBook.text("one")))
                #expect(try await d.playerctl("metadata", "xesam:asText").stdout == LyricsBook.text("one"))
                #expect(try await d.listenProperty("LyricsLineIndex") == .int32(-1))
                #expect(try await d.listenProperty("LyricsLine") == .string(""))
                #expect(try await d.listenProperty("LyricsNextLineStart") == .int64(500_000))
                // Not in TrackList metadata: a book's transcripts would make each reply megabytes long.
                let tracks = try await d.tracksMetadata(try await d.tracks())
                #expect(tracks.count == 2 && tracks.allSatisfy { $0["xesam:asText"] == nil && $0["xesam:url"] != nil })

                let mark = d.signals.mark
                try await d.call("SetPosition", [.objectPath(try #require(try await d.trackID())), .int64(1_200_000)])
                let signal = await d.signals.waitFor(since: mark) { $0.lyricsLine != nil }
                #expect(signal?.lyricsLine?.index == 1)
                #expect(signal?.lyricsLine?.text == "one 1")
                #expect(try await d.listenProperty("LyricsLine") == .string("one 1"))
                #expect(try await d.listenProperty("LyricsNextLineStart") == .int64(1_500_000))
            }
        }

        @Test func aBookOfTheLibraryHasItsTextToo() async throws {
            let book = try await offThePool { try LyricsBook() }
            try await DaemonFixture.with { d in
                _ = try await d.activateImported(book.folder)
                #expect(try await d.metadata()["xesam:asText"] == .string(LyricsBook.text("one")))
                #expect(try await d.listenProperty("LyricsNextLineStart") == .int64(500_000))
            }
        }

        /// Seeks forward and back; then, from the start again, playing at 1.5 through the gapless handover into the
        /// second file: every line once, in order, never before it is heard. A speed change is a seek: the lines
        /// follow only if the position is the stream's again once that seek lands.
        @Test func linesFollowSeeksSpeedAndTheGaplessHandover() async throws {
            let book = try await offThePool { try LyricsBook() }
            try await DaemonFixture.with { d in
                try await d.openPaused(book.folder)
                let track = try #require(try await d.trackID())
                let start = d.signals.mark
                var mark = start
                try await d.call("SetPosition", [.objectPath(track), .int64(3_200_000)])  // forward: "one 5" (3 s)
                #expect(await d.signals.waitFor(since: mark) { $0.lyricsLine != nil }?.lyricsLine?.text == "one 5")
                mark = d.signals.mark
                try await d.call("SetPosition", [.objectPath(track), .int64(700_000)])  // back: "one 0" (0.5 s)
                let back = await d.signals.waitFor(since: mark) { $0.lyricsLine != nil }?.lyricsLine
                #expect(back?.index == 0)
                #expect(back?.start == 500_000)
                #expect(back?.next == 1_000_000)
                #expect(back?.text == "one 0")

            }
            // From the start again: a daemon of its own (opened again, the book would resume at its place).
            try await DaemonFixture.with { d in
                try await d.openPaused(book.folder)
                let start = d.signals.mark
                try await d.set("Rate", .double(1.5))
                let mark = d.signals.mark
                try await d.call("Play")
                // Until the second file's "two 1"; after each line, the position is at or past its start.
                var seen: [String] = []
                var heardEarly: [String] = []
                let deadline = ContinuousClock.now + .seconds(20)
                while seen.last != "two 1", ContinuousClock.now < deadline {
                    let lines = d.signals.since(mark).compactMap(\.lyricsLine)
                    if lines.count > seen.count {
                        let position = try await d.listenProperty("FilePosition").int64 ?? -1
                        let url = try await d.currentURL() ?? ""
                        let latest = lines[lines.count - 1]
                        let sameFile = url.hasSuffix(latest.text.hasPrefix("two") ? "2.ogg" : "1.ogg")
                        if latest.start >= 0, sameFile, position < latest.start { heardEarly.append("\(latest.text) at \(position)") }
                        seen = lines.map { $0.index < 0 ? "-" : $0.text }
                    }
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(seen == ["one 0", "one 1", "one 2", "one 3", "one 4", "one 5", "one 6", "-", "two 0", "two 1"],
                        "\(trace(d, since: start))\n\(d.log)")
                #expect(heardEarly == [])
                #expect(try await d.metadata()["xesam:asText"] == .string(LyricsBook.text("two")))
                #expect(try await d.get("Rate") == .double(1.5))
            }
        }

        @Test func lecternLyricsPrintsTheTextAndFollowsTheLines() async throws {
            let book = try await offThePool { try LyricsBook() }
            try await DaemonFixture.with { d in
                let nothing = try await d.lectern("lyrics")
                #expect(nothing.status == 1 && nothing.stderr.contains("nothing is loaded"), "\(nothing)")
                try await d.openPaused(book.folder)
                let printed = try await d.lectern("lyrics")
                #expect(printed.status == 0)
                #expect(printed.stdout == LyricsBook.text("one"))

                try await d.call("SetPosition", [.objectPath(try #require(try await d.trackID())), .int64(1_200_000)])
                #expect(try await d.listenProperty("LyricsLine") == .string("one 1"))
                let follow = try Subprocess(builtExecutable("lectern").path, ["lyrics", "--follow"], environment: d.environment)
                defer { follow.kill() }
                #expect(await follow.readLine(timeout: .seconds(15)) == "one 1", "the line heard now, at once")
                try await d.call("Play")
                var lines: [String] = []
                for _ in 0..<3 {
                    guard let line = await follow.readLine(timeout: .seconds(15)) else { break }
                    lines.append(line)
                }
                #expect(lines == ["one 2", "one 3", "one 4"])
            }
        }

        /// Activating a book reads the LRC files beside its files off the database's writer thread (`lectern-db`),
        /// where every position save waits behind whatever runs: seen with strace, by the thread that looks for them.
        @Test func aBooksLRCFilesAreReadOffTheWriterThread() async throws {
            let book = try await offThePool { try LyricsBook() }
            try await DaemonFixture.with { d in
                let id = try await d.importOK(book.folder)[0]
                let trace = d.directory.appending("lrc.trace").path
                let strace = try Subprocess("strace", ["-f", "-qq", "-e", "trace=stat,newfstatat,statx,open,openat", "-o", trace,
                                                       "-p", "\(d.daemon.pid)"], stdout: .pipe, stderr: .pipe)
                defer { if strace.isRunning { strace.kill() } }
                // strace attaches to the threads one by one: wait for every one.
                let deadline = ContinuousClock.now + .seconds(5)
                func traced(_ task: String) -> Bool {
                    (try? String(contentsOfFile: "/proc/\(d.daemon.pid)/task/\(task)/status", encoding: .utf8))?
                        .split(separator: "\n").first { $0.hasPrefix("TracerPid:") }.map { !$0.hasSuffix("\t0") } ?? false
                }
                while ContinuousClock.now < deadline {
                    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(d.daemon.pid)/task")) ?? []
                    if !tasks.isEmpty && tasks.allSatisfy(traced) { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                try await d.lib("ActivateBook", [.int64(id), .boolean(false)])
                _ = try await d.waitForCurrentBook(id)
                #expect(try await d.metadata()["xesam:asText"] == .string(LyricsBook.text("one")))
                let lrc = book.files[1].deletingPathExtension().appendingPathExtension("lrc").path
                var lines: [Substring] = []
                while ContinuousClock.now < deadline + .seconds(5) {
                    lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n")
                        .filter { $0.contains("\"\(lrc)\"") }
                    if !lines.isEmpty { break }
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(!lines.isEmpty, "strace saw no look for \(lrc)")
                let threads = Set(lines.compactMap { line in line.split(separator: " ").first.map(String.init) }).map { tid in
                    (try? String(contentsOfFile: "/proc/\(d.daemon.pid)/task/\(tid)/comm", encoding: .utf8))?
                        .trimmingCharacters(in: .whitespacesAndNewlines) ?? "gone"
                }
                #expect(!threads.isEmpty && !threads.contains("lectern-db"), "\(threads): \(lines)")
            }
        }

        /// An M4B of three chapters (0, 10, 20.5 s) with one transcript beside it: each chapter's Metadata has the
        /// words heard in it (the line heard at its start, then those starting in it); Player1's line stays the file's.
        @Test func aChapterHasTheWordsHeardInIt() async throws {
            let directory = try TemporaryDirectory(prefix: "lectern-chapter-lyrics")
            defer { directory.remove() }
            let file = directory.appending("book.m4b")
            let input = try ChapterBook.ffmpegInput(chaptersFile: directory.appending("chapters.txt"))
            try await offThePool { try AudioFiles.ffmpeg(input + ["-c:a", "aac", file.path]) }
            let lines = [("00:01.00", "one"), ("00:05.00", "two"), ("00:09.50", "three"), ("00:12.00", "four"),
                         ("00:21.00", "five"), ("00:25.00", "six")]
            try Data(lines.map { "[\($0.0)]\($0.1)" }.joined(separator: "\n").utf8).write(to: directory.appending("book.lrc"))
            try await DaemonFixture.with { d in
                try await d.openPaused(file)
                #expect(try await d.metadata()["xesam:asText"] == .string("one\ntwo\nthree"), "\(d.log)")
                try await d.call("Next")
                let chapter2 = try await d.waitForProperty("Metadata") { $0.stringKeyedDictionary?["lectern:chapterIndex"] == .int32(1) }
                #expect(chapter2.stringKeyedDictionary?["xesam:asText"] == .string("three\nfour"), "the line heard at 10 s, then 12 s")
                #expect(try await d.listenProperty("LyricsLine") == .string("three"))
                #expect(try await d.listenProperty("LyricsLineIndex") == .int32(2), "an index into the file's lines")
                try await d.call("Next")
                let chapter3 = try await d.waitForProperty("Metadata") { $0.stringKeyedDictionary?["lectern:chapterIndex"] == .int32(2) }
                #expect(chapter3.stringKeyedDictionary?["xesam:asText"] == .string("four\nfive\nsix"))
                #expect(try await d.lectern("lyrics").stdout == "four\nfive\nsix")
            }
        }

        /// An LRC file that cannot be used gives no text and a warning naming it; the file plays.
        @Test(arguments: ["not-utf8", "huge", "malformed", "fifo"])
        func aBadLRCFileGivesNoTextAndAWarning(_ kind: String) async throws {
            let directory = try TemporaryDirectory(prefix: "lectern-bad-lrc")
            let file = directory.appending("\(kind).ogg")
            let lrc = directory.appending("\(kind).lrc")
            try FileManager.default.copyItem(at: (try await MediaLibrary.shared()).long, to: file)
            switch kind {
            case "not-utf8": try Data([0x5B, 0x30, 0x30, 0x3A, 0x30, 0x31, 0x5D, 0x63, 0x61, 0x66, 0xE9, 0x0A]).write(to: lrc)
            case "huge": try Data(repeating: 0x61, count: 3 << 20).write(to: lrc)
            case "malformed": try Data("[00:01.00]fine\n[00:99.00]not a time\n".utf8).write(to: lrc)
            default: #expect(mkfifo(lrc.path, 0o644) == 0)
            }
            try await DaemonFixture.with { d in
                try await d.openURI(file)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                #expect(try await d.metadata()["xesam:asText"] == nil)
                #expect(try await d.listenProperty("LyricsLineIndex") == .int32(-1))
                #expect(d.log.contains("cannot read the lyrics") && d.log.contains(lrc.lastPathComponent), "\(d.log)")
            }
        }
    }
}
