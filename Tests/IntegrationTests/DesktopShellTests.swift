import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Desktop {
    /// Lectern as a GNOME user meets it: the real GNOME Shell of Debian 12, headless, with the real gsd-media-keys, on
    /// the bus of an installed Lectern (its desktop entry and activation files). The shell's media card shows the
    /// playing book and its buttons act on it, the media keys reach it, a click on the card reaches the running daemon,
    /// and the card goes away with the daemon. The shell is started once (about 215 MB).
    @Suite struct DesktopShellTests {
        /// One 3-minute M4B: three chapters of 60 s (a Forward key's 45 s stays within one), an author, a PNG cover.
        static let chapterTitles = ["The Spice", "Chapitre 2 — L’été", "The Desert"]
        static let chapterSeconds = 60
        static let author = "Ann Author"

        struct Book {
            let folder: URL
            /// The image embedded in the book's file (kept outside its folder: no cover.png beside it).
            let cover: URL
        }

        static func book() async throws -> Book {
            let root = try await GeneratedFiles.directory("desktop-book") { root in
                let folder = root.appendingPathComponent("book")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let cover = root.appendingPathComponent("cover.png")
                try AudioFiles.png(cover)
                let milliseconds = chapterSeconds * 1000
                let chapters = root.appendingPathComponent("chapters.txt")
                try ChapterBook.metadata(chapterTitles.indices.map { (chapterTitles[$0], $0 * milliseconds, ($0 + 1) * milliseconds) })
                    .write(to: chapters, atomically: true, encoding: .utf8)
                let seconds = chapterTitles.count * chapterSeconds
                try AudioFiles.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=\(seconds)", "-i", chapters.path,
                                       "-i", cover.path, "-map", "0:a", "-map", "2:v", "-map_metadata", "1",
                                       "-map_chapters", "1", "-metadata", "artist=\(author)", "-c:a", "aac", "-b:a", "32k",
                                       "-ac", "1", "-c:v", "copy", "-disposition:v", "attached_pic",
                                       folder.appendingPathComponent("book.m4b").path])
            }
            return Book(folder: root.appendingPathComponent("book"), cover: root.appendingPathComponent("cover.png"))
        }

        @Test func theShellsMediaCardAndMediaKeysDriveTheInstalledDaemon() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-desktop")
            defer { root.remove() }
            let installation = try await Installation.install(into: root.appending("prefix").path)
            let book = try await Self.book()
            // The daemon started here (a fake sink, the test's folders); the bus would activate the installed one.
            try await DaemonFixture.with(daemonArguments: ["--log-level", "debug"], installation: installation) { d in
                let shell = try await GnomeShell(sessionBus: d.bus.address, installation: installation)
                defer { shell.stop() }
                let daemon = d.daemon.pid

                // The card of the playing book: its chapter's title, its author, its cover, a pause button.
                try await d.openURI(book.folder)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                var card = try await shell.waitForCard { $0?.title == Self.chapterTitles[0] }
                #expect(card?.title == Self.chapterTitles[0], "\(shell.output)")
                #expect(card?.body == Self.author)
                #expect(card?.playPauseIcon == "media-playback-pause-symbolic")
                #expect(card?.canGoNext == true)
                let cover = try #require(card?.cover, "the card shows no cover")
                #expect(FileManager.default.contents(atPath: cover) == FileManager.default.contents(atPath: book.cover.path),
                        "the card's image \(cover) is not the book's cover")

                // Its buttons: play/pause both ways, then the next chapter.
                try await shell.pressCardButton(.playPause)
                #expect(try await d.waitForStatus("Paused") == "Paused")
                card = try await shell.waitForCard { $0?.playPauseIcon == "media-playback-start-symbolic" }
                #expect(card?.playPauseIcon == "media-playback-start-symbolic")
                try await shell.pressCardButton(.playPause)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                try await shell.pressCardButton(.next)
                card = try await shell.waitForCard { $0?.title == Self.chapterTitles[1] }
                #expect(card?.title == Self.chapterTitles[1])
                #expect(try await d.metadata()["xesam:title"] == .string(Self.chapterTitles[1]))
                #expect(card?.canGoPrevious == true)

                // A click on the card: the shell activates org.lectern.Lectern.desktop, which reaches this daemon.
                try await shell.activateCard()
                let log = try await poll({ d.log }, until: { $0.contains("activated by the desktop") })
                #expect(log.contains("activated by the desktop"), "the activation did not reach lecternd:\n\(shell.output)")
                for name in Installation.busNames {
                    #expect(try await ownerPID(of: name, on: d.client) == daemon, "\(name) changed hands")
                }
                // The daemon's own media reader is lecternd too.
                let others = runningProcesses(of: installation.lecternd).filter { $0 != daemon && parentPID(of: $0) != daemon }
                #expect(others.isEmpty, "another lecternd runs: \(others)")
                #expect(Self.errorLines(d.log).isEmpty, "\(d.log)")

                // The media keys, through gsd-media-keys: Play pauses, Forward and Rewind move 45 s and 10 s in the
                // chapter, Next and Previous move by chapter, Play plays, Stop stops.
                try await shell.press(.play)
                #expect(try await d.waitForStatus("Paused") == "Paused")
                let paused = try await d.position()
                try await shell.press(.forward)
                var position = try await d.waitForProperty("Position") { near($0.int64, paused + 45_000_000, within: 500_000) }
                #expect(near(position.int64, paused + 45_000_000, within: 500_000), "Forward: \(paused) µs -> \(position)")
                try await shell.press(.rewind)
                position = try await d.waitForProperty("Position") { near($0.int64, paused + 35_000_000, within: 500_000) }
                #expect(near(position.int64, paused + 35_000_000, within: 500_000), "Rewind: \(paused) µs + 45 s -> \(position)")
                #expect(try await d.metadata()["xesam:title"] == .string(Self.chapterTitles[1]), "still the same chapter")
                try await shell.press(.next)
                card = try await shell.waitForCard { $0?.title == Self.chapterTitles[2] }
                #expect(card?.title == Self.chapterTitles[2])
                try await shell.press(.previous)  // at the start of a chapter: the one before
                card = try await shell.waitForCard { $0?.title == Self.chapterTitles[1] }
                #expect(card?.title == Self.chapterTitles[1])
                try await shell.press(.play)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                try await shell.press(.stop)
                #expect(try await d.waitForStatus("Stopped") == "Stopped")

                // The daemon stops: its card goes.
                #expect(await d.stopDaemon() == 0, "lecternd did not exit 0 on SIGTERM:\n\(d.log)")
                card = try await shell.waitForCard { $0 == nil }
                #expect(card == nil, "the card stayed after the daemon stopped")
                #expect(Self.errorLines(d.log).isEmpty, "\(d.log)")
            }
        }

        /// The lines of lecternd's log at level error or critical (swift-log's stream format: "time level label: …").
        static func errorLines(_ log: String) -> [Substring] {
            log.split(separator: "\n").filter { line in
                let fields = line.split(separator: " ", maxSplits: 2)
                return fields.count > 1 && ["error", "critical"].contains(fields[1])
            }
        }
    }
}
