import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Faults {
    /// What a careless or hostile client sends: the right D-Bus error, and playback goes on untouched.
    @Suite struct BadInput {
        @Test func wrongTypesUnknownMembersAndReadOnlyPropertiesAreRefused() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                // Prerolled and playing, and read by the media reader (which changes Metadata): before the mark.
                _ = try await d.waitForPosition(atLeast: 1)
                try await d.waitForTracksDiscovered()
                let url = try await d.currentURL()
                let track = try #require(try await d.trackID())
                let mark = d.signals.mark

                let wrongArguments: [(String, [DBusValue])] = [
                    ("Seek", [.string("ten seconds")]),
                    ("Seek", [.int32(5)]),
                    ("Seek", []),
                    ("Seek", [.int64(1), .int64(2)]),
                    ("SetPosition", [.string(track.rawValue), .int64(1_000_000)]),
                    ("SetPosition", [.objectPath(track)]),
                    ("SetPosition", [.int64(1_000_000), .objectPath(track)]),
                    ("OpenUri", [.int32(1)]),
                    ("OpenUri", []),
                    ("Play", [.string("now")]),
                ]
                for (method, arguments) in wrongArguments {
                    #expect(await d.errorName { try await d.call(method, arguments) } == DBusErrors.invalidArgs,
                            "\(method)(\(arguments))")
                }
                #expect(await d.errorName { try await d.set("Volume", .string("loud")) } == DBusErrors.invalidArgs)
                #expect(await d.errorName { try await d.set("Shuffle", .int32(1)) } == DBusErrors.invalidArgs)
                #expect(await d.errorName {
                    try await d.call("Get", [.string(MPRIS.player)], interface: MPRIS.properties)
                } == DBusErrors.invalidArgs)

                #expect(await d.errorName { try await d.call("Frobnicate") } == DBusErrors.unknownMethod)
                #expect(await d.errorName { try await d.call("Frobnicate", interface: MPRIS.root) } == DBusErrors.unknownMethod)
                let unknownInterface = await d.errorName { try await d.call("Play", interface: "org.example.Nope") }
                #expect(unknownInterface == DBusErrors.unknownInterface || unknownInterface == DBusErrors.unknownMethod,
                        "method of an unknown interface: \(String(describing: unknownInterface))")
                #expect(await d.errorName { try await d.get("Nope") } == DBusErrors.unknownProperty)
                let noInterface = await d.errorName { try await d.get("Volume", interface: "org.example.Nope") }
                #expect(noInterface == DBusErrors.unknownInterface || noInterface == DBusErrors.invalidArgs,
                        "Get on an unknown interface: \(String(describing: noInterface))")
                #expect(await d.errorName { try await d.getAll("org.example.Nope") } != nil)

                for (name, value) in [("PlaybackStatus", DBusValue.string("Paused")), ("Position", .int64(0)),
                                      ("Metadata", .emptyVardict), ("CanControl", .boolean(false)),
                                      ("MaximumRate", .double(10))] {
                    #expect(await d.errorName { try await d.set(name, value) } == DBusErrors.propertyReadOnly, "Set \(name)")
                }
                #expect(await d.errorName { try await d.set("Identity", .string("Nope"), interface: MPRIS.root) }
                        == DBusErrors.propertyReadOnly)
                #expect(await d.errorName { try await d.set("Nope", .boolean(true)) } == DBusErrors.unknownProperty)

                // Still alive, still playing the same file, nothing announced, no Seeked.
                try await d.signals.barrier()
                #expect(d.daemon.isRunning)
                #expect(try await d.status() == "Playing")
                #expect(try await d.currentURL() == url)
                #expect(try await d.trackID() == track)
                #expect(try await d.get("Identity", interface: MPRIS.root) == .string("Lectern"))
                #expect(try await d.get("Volume") == .double(1))
                #expect(try await d.get("Rate") == .double(1))
                #expect(d.signals.playerChanges(since: mark).isEmpty, "\(d.signals.playerChanges(since: mark))")
                #expect(d.signals.seeked(since: mark).isEmpty)
                let before = try await d.position()
                #expect(try await d.waitForPosition(atLeast: before + 200_000) >= before + 200_000, "still playing")
            }
        }

        /// Creates `folders` folders of `each` empty .mp3 and `each` empty .txt files below `top`: plain open and close,
        /// a second or two for 100,000 files.
        private static func emptyFiles(in top: String, folders: Int, each: Int) throws {
            for folder in 0..<folders {
                let dir = "\(top)/Empty \(folder)"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                for n in 0..<each {
                    for name in ["\(dir)/\(n).mp3", "\(dir)/\(n).txt"] {
                        let fd = open(name, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
                        guard fd >= 0 else { throw FixtureError("cannot create \(name)") }
                        close(fd)
                    }
                }
            }
        }

        /// A copy of `source` at a path made of `folder` and a name's raw bytes (not UTF-8).
        private static func copy(_ source: URL, to folder: String, rawName: [UInt8]) throws {
            let data = try Data(contentsOf: source)
            let path = Array(folder.utf8) + [UInt8(ascii: "/")] + rawName + [0]
            let fd = path.withUnsafeBufferPointer {
                open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
            }
            guard fd >= 0 else { throw FixtureError("cannot create a file with a Latin-1 name in \(folder)") }
            defer { close(fd) }
            guard data.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == data.count else { throw FixtureError("short write") }
        }

        /// ImportFinished's `skipped`, by kind: (count, first paths).
        private static func skipped(_ finished: RecordedSignal?) -> [String: (count: Int64, examples: [String])] {
            var found: [String: (count: Int64, examples: [String])] = [:]
            for entry in finished?.arguments.dropFirst(3).first?.elements ?? [] {
                guard let parts = entry.fields, parts.count == 3, let kind = parts[0].string else { continue }
                found[kind] = (parts[1].int64 ?? -1, parts[2].stringArray ?? [])
            }
            return found
        }

        /// A folder of 100,000 empty or non-audio files, a FIFO named .mp3, symbolic link loops, names that are not
        /// UTF-8 (Latin-1) and a damaged file, around one real book: the import finishes with the book, says what it
        /// left out and why (the signal, one log line per kind, `lectern import`), opens no FIFO, and the daemon
        /// answers MPRIS all along.
        @Test func aHostileFolderIsImportedReportedAndTheDaemonAnswersThroughout() async throws {
            try await DaemonFixture.with { d in
                let top = d.directory.appending("Hostile").path
                try Self.emptyFiles(in: top, folders: 200, each: 250)
                let book = top + "/Real Book"
                try FileManager.default.copyItem(atPath: d.media.book.path, toPath: book)
                #expect(mkfifo(book + "/fifo.mp3", 0o644) == 0)
                try FileManager.default.createSymbolicLink(atPath: top + "/loop", withDestinationPath: top)
                try FileManager.default.createSymbolicLink(atPath: book + "/up", withDestinationPath: "..")
                try FileManager.default.createDirectory(atPath: top + "/Vieux", withIntermediateDirectories: true)
                try Self.copy(d.media.taggedMP3, to: top + "/Vieux", rawName: Array("Les Mis".utf8) + [0xE9] + Array("rables.mp3".utf8))
                try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }).write(to: URL(fileURLWithPath: book + "/zz-damaged.mp3"))

                let mark = d.signals.mark
                let job = try await d.lib("Import", [.string(top), .string("")]).first
                let isFinished = { (signal: RecordedSignal) in signal.isLibrary("ImportFinished") && signal.arguments.first == job }
                // A Get answered, then a barrier: no ImportFinished before the barrier means the Get was answered while
                // the import ran.
                var answeredDuring = 0
                let deadline = ContinuousClock.now + .seconds(120)
                while ContinuousClock.now < deadline {
                    #expect(try await d.get("PlaybackStatus") == .string("Stopped"))
                    let barrier = try await d.signals.barrier()
                    if d.signals.since(mark).contains(where: { isFinished($0) && $0.index < barrier }) { break }
                    answeredDuring += 1
                }
                let finished = d.signals.since(mark).first(where: isFinished)
                #expect(finished != nil, "no ImportFinished:\n\(d.log.suffix(3000))")
                #expect(answeredDuring > 0)
                #expect(finished?.arguments[2] == .string(""))
                let books = finished?.arguments[1].elements?.compactMap(\.int64) ?? []
                #expect(books.count == 1)
                let files = try await d.files(of: books.first ?? 0)
                #expect(files.compactMap { $0["path"]?.string } == MediaLibrary.bookFiles.map { book + "/" + $0 })

                let skipped = Self.skipped(finished)
                #expect(skipped["empty"]?.count == 50_000)
                #expect(skipped["empty"]?.examples.count == 3)
                #expect(skipped["not-audio"]?.count == 50_000)
                #expect(skipped["special"]?.count == 1 && skipped["special"]?.examples == [book + "/fifo.mp3"])
                #expect(skipped["link"]?.count == 2)
                #expect(skipped["name-not-utf8"]?.count == 1 && skipped["name-not-utf8"]?.examples == [top + "/Vieux/Les Mis\\xE9rables.mp3"])
                #expect(skipped["unplayable"]?.count == 1 && skipped["unplayable"]?.examples == [book + "/zz-damaged.mp3"])
                #expect(Set(skipped.keys) == ["empty", "not-audio", "special", "link", "name-not-utf8", "unplayable"], "\(skipped)")
                // One log line per kind, not one per file.
                let log = d.log
                #expect(log.components(separatedBy: "an import left files out").count - 1 == skipped.count, "\(log.suffix(3000))")
                #expect(log.components(separatedBy: top + "/Empty ").count < 20, "a line per file?\n\(log.suffix(3000))")

                // `lectern import` says it too (nothing is read again: the files are unchanged).
                let cli = try await d.lectern("import", top)
                #expect(cli.status == 0, "\(cli.stderr)")
                #expect(cli.stdout.contains("skipped 50000 empty files: \(top)/Empty "), "\(cli.stdout)")
                #expect(cli.stdout.contains("skipped 1 FIFOs, devices or sockets (never opened): \(book)/fifo.mp3\n"), "\(cli.stdout)")
                #expect(cli.stdout.contains("skipped 1 names that are not UTF-8 (rename them to import them): \(top)/Vieux/Les Mis\\xE9rables.mp3"),
                        "\(cli.stdout)")

                // The FIFO itself, imported: refused without opening it.
                let fifo = try await d.importFolder(URL(fileURLWithPath: book + "/fifo.mp3"))
                #expect(fifo.books.isEmpty && fifo.error.contains("special"), "\(fifo)")
                #expect(try await d.get("PlaybackStatus") == .string("Stopped"))
                #expect(try await d.allBooks().count == 1)
            }
        }

        @Test func openUriOfSomethingUnplayableFailsAndChangesNothing() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                // Prerolled and playing, and read by the media reader (which changes Metadata): before the mark.
                _ = try await d.waitForPosition(atLeast: 1)
                try await d.waitForTracksDiscovered()
                let url = try await d.currentURL()
                let track = try await d.trackID()
                let mark = d.signals.mark

                let missing = d.directory.appending("no-such-book.mp3")
                let bad = [
                    MediaLibrary.uri(missing),
                    "file:///etc/passwd",
                    "ftp://example.com/x.mp3",
                    "http://",
                    "",
                    "relative/path",
                    "relative/path.ogg",
                    MediaLibrary.uri(d.media.emptyFolder),
                    "file://otherhost/etc/x.ogg",
                ]
                for uri in bad {
                    let error = await d.errorName { try await d.call("OpenUri", [.string(uri)]) }
                    #expect(error != nil, "OpenUri(\"\(uri)\") must fail")
                    #expect(try await d.currentURL() == url, "after OpenUri(\"\(uri)\")")
                    #expect(try await d.status() == "Playing", "after OpenUri(\"\(uri)\")")
                }
                let viaPlayerctl = try await d.playerctl("open", "ftp://example.com/x.mp3")
                _ = viaPlayerctl  // playerctl may or may not report the error; the state is what matters.

                try await d.signals.barrier()
                #expect(d.signals.values(of: "Metadata", since: mark).isEmpty)
                #expect(d.signals.values(of: "PlaybackStatus", since: mark).isEmpty)
                #expect(try await d.trackID() == track)
                #expect(try await d.currentURL() == url)
                let before = try await d.position()
                #expect(try await d.waitForPosition(atLeast: before + 200_000) >= before + 200_000, "still playing")
            }
        }
    }
}
