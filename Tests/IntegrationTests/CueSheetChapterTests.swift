import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Player {
    /// A long file with a CUE sheet beside it, imported: its chapters are the sheet's tracks, in MPRIS TrackList.
    @Suite struct CueSheetChapters {
        @Test func theSheetsTracksAreTheTrackList() async throws {
            let directory = try TemporaryDirectory(prefix: "lectern-cue")
            let folder = directory.appending("Book")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try await offThePool { try AudioFiles.ogg(folder.appendingPathComponent("book.ogg"), seconds: 4) }
            try Data("""
                PERFORMER "Ann Reader"
                FILE "book.wav" WAVE
                  TRACK 01 AUDIO
                    TITLE "Prologue"
                    INDEX 01 00:00:00
                  TRACK 02 AUDIO
                    TITLE "Chapter 1"
                    PERFORMER "Guest Voice"
                    INDEX 01 00:02:00
                """.utf8).write(to: folder.appendingPathComponent("Book.cue"))
            try await DaemonFixture.with { d in
                _ = try await d.activateImported(folder)
                let tracks = try await d.tracksMetadata(try await d.tracks())
                #expect(tracks.map { $0["xesam:title"]?.string } == ["Prologue", "Chapter 1 — Guest Voice"])
                #expect(tracks.first?["mpris:length"]?.int64 == 2_000_000)
            }
        }
    }
}
