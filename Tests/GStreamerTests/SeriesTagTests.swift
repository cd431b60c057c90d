import Foundation
import GStreamer
import Testing
import TestSupport

/// A book's series and its part, as the discoverer reads them from ID3 frames and Vorbis comments (GStreamer 1.22 maps
/// none of them: they come as "private-id3v2-frame" and "extended-comment"). MP4 files' are the MP4 module's.
@Suite("Series tags")
struct SeriesTagTests {
    @Test(arguments: SeriesTags.names(["mp3", "ogg", "opus", "flac"]))
    func theDiscovererReadsTheSeries(_ name: String) async throws {
        let tagged = SeriesTags.named(name)
        let folder = try TemporaryDirectory(prefix: "lectern-series")
        defer { folder.remove() }
        let info = try await offThePool { try Discoverer.discover(SeriesTags.file(tagged, in: folder.url)) }
        #expect(info.series == tagged.series)
        #expect(info.seriesPart == tagged.part)
        #expect(info.title == (tagged.format == "mp3" ? "A Book" : nil), "the other tags are read as before")
    }

    @Test func theFirstSourceThatNamesASeriesGivesItsPart() {
        #expect(MediaInfo.series(from: [("Discworld", nil), ("Mistborn", "2")]) == ("Discworld", nil))
        #expect(MediaInfo.series(from: [(" ", "3"), ("Mistborn", " 2 ")]) == ("Mistborn", "2"))
        #expect(MediaInfo.series(from: [(nil, ""), (nil, "0")]) == (nil, "0"), "a part without a series is kept")
        #expect(MediaInfo.series(from: [(nil, nil), ("", " ")]) == (nil, nil))
    }
}
