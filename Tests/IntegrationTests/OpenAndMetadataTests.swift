import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Player {
    /// Opening files and folders, and the metadata clients show for them.
    @Suite struct OpenAndMetadata {
        @Test func playerctlOpenFolderPlaysFirstFileInNaturalOrderWithMetadata() async throws {
            try await DaemonFixture.with { d in
                let mark = d.signals.mark
                let open = try await d.playerctl("open", MediaLibrary.uri(d.media.book))
                #expect(open.status == 0, "playerctl open: \(open)")
                #expect(try await d.waitForURL(endingWith: "/book/1.ogg") == MediaLibrary.uri(d.media.book.appendingPathComponent("1.ogg")))
                #expect(try await d.waitForStatus("Playing") == "Playing")
                // Announced, not only readable (sent before the reply to the Get that read it: the barrier).
                try await d.signals.barrier()
                #expect(d.signals.values(of: "PlaybackStatus", since: mark).contains(.string("Playing")))
                #expect(await d.signals.waitFor(since: mark) {
                    $0.playerChanges["Metadata"]?.stringKeyedDictionary?["xesam:url"]?.string?.hasSuffix("/book/1.ogg") == true
                } != nil)
                try await d.call("Pause")
                #expect(try await d.waitForStatus("Paused") == "Paused")

                // playerctl prints an object path as GVariant text: '/org/...'.
                let shown = try await d.playerctl("metadata", "mpris:trackid")
                #expect(shown.status == 0)
                let trackid = shown.stdout.trimmingCharacters(in: CharacterSet(charactersIn: "'"))
                #expect(trackid.hasPrefix("/"), "trackid \(shown.stdout)")
                #expect(!trackid.hasPrefix("/org/mpris"), "trackid \(shown.stdout)")
                #expect(try await d.trackID()?.rawValue == trackid)
                let length = try await d.playerctl("metadata", "mpris:length")
                #expect(near(Int64(length.stdout), 3_000_000, within: 250_000), "mpris:length \(length.stdout)")
                let title = try await d.playerctl("metadata", "xesam:title")
                #expect(title.stdout == "1", "an untagged file is titled by its name: \(title.stdout)")

                let all = try await d.getAll()
                #expect(all["CanPlay"] == .boolean(true))
                #expect(all["CanPause"] == .boolean(true))
                #expect(all["CanSeek"] == .boolean(true))
                #expect(all["CanGoNext"] == .boolean(true))
                #expect(all["CanGoPrevious"] == .boolean(true), "Previous restarts the first track")
                let metadata = all["Metadata"]?.stringKeyedDictionary ?? [:]
                #expect(metadata["mpris:trackid"]?.type == .objectPath)
                #expect(metadata["mpris:length"]?.type == .int64)
                #expect(metadata["xesam:title"]?.type == .string)
                if let artist = metadata["xesam:artist"] { #expect(artist.type == .array(.string)) }

                // Natural order, each file with an id of its own, stable when coming back.
                var ids: [String] = [trackid]
                for name in ["2.ogg", "10.ogg"] {
                    let next = try await d.playerctl("next")
                    #expect(next.status == 0)
                    #expect(try await d.waitForURL(endingWith: "/book/\(name)")?.hasSuffix("/book/\(name)") == true)
                    ids.append(try await d.trackID()?.rawValue ?? "")
                    #expect(try await d.metadata()["xesam:title"] == .string(String(name.dropLast(4))))
                }
                #expect(Set(ids).count == 3, "track ids \(ids)")
                try await d.call("Previous")
                try await d.call("Previous")
                #expect(try await d.waitForURL(endingWith: "/book/1.ogg")?.hasSuffix("/book/1.ogg") == true)
                #expect(try await d.trackID()?.rawValue == ids[0])
            }
        }

        /// What a folder's book holds: its audio files in natural order of their names (a subfolder's untagged files
        /// are a book of their own); never a hidden name, a symbolic link (to a file or a folder), a FIFO or a file that
        /// is not audio by its name.
        @Test func aFolderIsABookOfItsAudioFilesButNoHiddenNamesLinksOrFIFOs() async throws {
            try await DaemonFixture.with { d in
                let folder = d.directory.appending("shelf")
                let fm = FileManager.default
                let audio = d.media.book.appendingPathComponent("1.ogg")
                // Each a different recording: the library takes the same audio twice as a copy.
                let sources = ["2.ogg": audio, "10.ogg": d.media.book.appendingPathComponent("2.ogg"),
                               "Disc 2/1.ogg": d.media.book.appendingPathComponent("10.ogg"),
                               "UPPER.OGG": d.media.shortBook.appendingPathComponent("1.ogg")]
                for name in ["2.ogg", "10.ogg", "Disc 2/1.ogg", "UPPER.OGG", ".hidden.ogg", ".hidden/3.ogg", "notes.txt"] {
                    let file = folder.appendingPathComponent(name)
                    try fm.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try fm.copyItem(at: sources[name] ?? audio, to: file)
                }
                try fm.createSymbolicLink(atPath: folder.appendingPathComponent("link.ogg").path, withDestinationPath: audio.path)
                try fm.createSymbolicLink(atPath: folder.appendingPathComponent("Linked disc").path,
                                          withDestinationPath: folder.appendingPathComponent("Disc 2").path)
                #expect(mkfifo(folder.appendingPathComponent("fifo.ogg").path, 0o644) == 0)

                try await d.openURI(folder)
                try await d.waitForTracksDiscovered()
                let tracks = try await d.get("Tracks", interface: MPRIS.trackList).elements ?? []
                let metadata = try await d.call("GetTracksMetadata", [.array(.objectPath, tracks)], interface: MPRIS.trackList)
                    .first?.elements ?? []
                let urls = metadata.compactMap { $0.stringKeyedDictionary?["xesam:url"]?.string }
                // Untagged files make a book of each folder (as an import does): the folder's own book plays.
                #expect(urls == ["2.ogg", "10.ogg", "UPPER.OGG"].map { MediaLibrary.uri(folder.appendingPathComponent($0)) })
                var inLibrary: Set<String> = []
                for book in try await d.allBooks() {
                    for file in try await d.files(of: book["id"]?.int64 ?? 0) { inLibrary.insert(file["path"]?.string ?? "?") }
                }
                let allowed = Set(["2.ogg", "10.ogg", "Disc 2/1.ogg", "UPPER.OGG"].map { folder.appendingPathComponent($0).path })
                #expect(inLibrary == allowed, "the library has \(inLibrary.sorted())")
            }
        }

        @Test func tagsOfAnMP3ShowInMetadata() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.taggedMP3)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let metadata = try await d.metadata()
                #expect(metadata["xesam:title"] == .string(MediaLibrary.tags.title!))
                #expect(metadata["xesam:artist"] == .strings([MediaLibrary.tags.artist!]))
                #expect(metadata["xesam:album"] == .string(MediaLibrary.tags.album!))
                #expect(metadata["xesam:url"] == .string(MediaLibrary.uri(d.media.taggedMP3)))
                #expect(near(metadata["mpris:length"]?.int64, 3_000_000, within: 250_000), "\(metadata)")

                #expect(try await d.playerctl("metadata", "xesam:title").stdout == MediaLibrary.tags.title!)
                #expect(try await d.playerctl("metadata", "xesam:artist").stdout == MediaLibrary.tags.artist!)
                #expect(try await d.playerctl("metadata", "xesam:album").stdout == MediaLibrary.tags.album!)
                #expect(metadata["mpris:artUrl"] == nil, "no cover in this file, none beside it")
            }
        }

        @Test func embeddedCoverBecomesAnArtURLOfAnExistingFile() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.coverMP3)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let art = try await d.playerctl("metadata", "mpris:artUrl").stdout
                #expect(art.hasPrefix("file:///"), "mpris:artUrl \(art)")
                let url = URL(string: art)
                #expect(url?.isFileURL == true)
                let path = url?.path ?? ""
                #expect(FileManager.default.fileExists(atPath: path), "artUrl file \(path)")
                // It is the embedded image (a PNG), not some other file.
                let bytes = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
                #expect(bytes.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "not a PNG: \(path)")
                #expect(try await d.metadata()["mpris:artUrl"] == .string(art))
                #expect(try await d.metadata()["xesam:title"] == .string(MediaLibrary.tags.title!))
            }
        }

        @Test(arguments: [("wav", 2_000_000 as Int64), ("flac", 2_000_000), ("m4b", 4_000_000)])
        func otherFormatsPlayWithTheirLength(format: String, length: Int64) async throws {
            try await DaemonFixture.with { d in
                let file = switch format {
                case "wav": d.media.wav
                case "flac": d.media.flac
                default: d.media.m4b
                }
                try await d.openURI(file)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                // The pipeline really runs: the position moves.
                #expect(try await d.waitForPosition(atLeast: 300_000) >= 300_000, "position does not move")
                let metadata = try await d.metadata()
                #expect(metadata["xesam:url"] == .string(MediaLibrary.uri(file)))
                #expect(near(metadata["mpris:length"]?.int64, length, within: 300_000), "\(metadata)")
                if format == "m4b" {
                    #expect(metadata["xesam:title"] == .string(MediaLibrary.m4bTags.title!))
                    #expect(metadata["xesam:artist"] == .strings([MediaLibrary.m4bTags.artist!]))
                    #expect(metadata["xesam:album"] == .string(MediaLibrary.m4bTags.album!))
                }
            }
        }

        /// Three 1 s files (shorter than the ~1 s "about-to-finish" lead) and three 3 s files.
        @Test(arguments: ["short", "book"])
        func aFolderPlaysThroughOnItsOwnAndStops(folder: String) async throws {
            try await DaemonFixture.with { d in
                let (dir, files) = folder == "short" ? (d.media.shortBook, MediaLibrary.shortFiles)
                                                     : (d.media.book, MediaLibrary.bookFiles)
                let mark = d.signals.mark
                try await d.openURI(dir)
                let urls = files.map { MediaLibrary.uri(dir.appendingPathComponent($0)) }
                // Stopped after the last file started.
                let stopped = await d.signals.waitFor(since: mark, timeout: .seconds(folder == "short" ? 12 : 20)) { signal in
                    signal.playerChanges["PlaybackStatus"] == .string("Stopped")
                        && d.signals.since(mark).contains {
                            $0.index < signal.index
                                && $0.playerChanges["Metadata"]?.stringKeyedDictionary?["xesam:url"]?.string == urls.last
                        }
                }
                #expect(stopped != nil, "never stopped after the last file; signals: \(d.signals.since(mark))")
                var seen: [String] = []
                for change in d.signals.playerChanges(since: mark) {
                    if let url = change["Metadata"]?.stringKeyedDictionary?["xesam:url"]?.string, url != seen.last {
                        seen.append(url)
                    }
                }
                #expect(seen == urls, "xesam:url went through \(seen)")
                // No flicker on the way: Playing until the end.
                let statuses = d.signals.values(of: "PlaybackStatus", since: mark).compactMap(\.string)
                #expect(statuses == ["Playing", "Stopped"], "PlaybackStatus went through \(statuses)")
                #expect(try await d.status() == "Stopped")
                #expect(try await d.currentURL() == urls.last)
            }
        }
    }
}
