import Foundation
import MP4
import Testing
import TestSupport

/// Checks titles exactly and times within 1 ms.
func expectChapters(
    _ chapters: [MP4Chapter]?, titles: [String], starts: [Duration], ends: [Duration?],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let chapters else {
        Issue.record("no chapters", sourceLocation: sourceLocation)
        return
    }
    #expect(chapters.map(\.title) == titles, sourceLocation: sourceLocation)
    #expect(chapters.count == starts.count, sourceLocation: sourceLocation)
    for (index, chapter) in chapters.enumerated() where index < starts.count && index < ends.count {
        #expect(abs(chapter.start - starts[index]) <= .milliseconds(1), "start of \(index)", sourceLocation: sourceLocation)
        switch (chapter.end, ends[index]) {
        case let (actual?, expected?):
            #expect(abs(actual - expected) <= .milliseconds(1), "end of \(index)", sourceLocation: sourceLocation)
        case (nil, nil):
            break
        case let (actual, expected):
            Issue.record("end of \(index): \(String(describing: actual)) != \(String(describing: expected))",
                         sourceLocation: sourceLocation)
        }
    }
}

/// The chapters the fixtures were made with.
func expectFixtureChapters(_ chapters: [MP4Chapter]?, sourceLocation: SourceLocation = #_sourceLocation) {
    expectChapters(chapters, titles: ChapterBook.titles, starts: ChapterBook.starts, ends: ChapterBook.ends,
                   sourceLocation: sourceLocation)
}

private func abs(_ duration: Duration) -> Duration { duration < .zero ? .zero - duration : duration }

@Suite("MP4 chapters of files made by ffmpeg")
struct FFmpegFileTests {
    let files: MP4Fixtures

    init() async throws {
        files = try await MP4Fixtures.shared()
    }

    @Test("ffmpeg writes both a chapter track and a chpl, and they agree",
          arguments: [MP4Fixtures.File.m4b, .mp4, .m4a, .faststart])
    func bothSources(file: MP4Fixtures.File) throws {
        let sources = try MP4ChapterReader.sources(of: files.url(file))
        expectFixtureChapters(sources.quickTimeTrack)
        expectFixtureChapters(sources.nero)
        #expect(sources.duration == ChapterBook.duration)
        #expect(sources.preferred == sources.quickTimeTrack)
        #expect(try MP4ChapterReader.chapters(of: files.url(file)) == sources.quickTimeTrack)
        // The in-memory entry point reads the same.
        #expect(try MP4ChapterReader.sources(in: files.data(file)) == sources)
    }

    @Test("a file without chapters gives none")
    func noChapters() throws {
        let sources = try MP4ChapterReader.sources(of: files.url(.plain))
        #expect(sources.quickTimeTrack == nil)
        #expect(sources.nero == nil)
        #expect(sources.duration != nil)
        #expect(try MP4ChapterReader.chapters(of: files.url(.plain)) == [])
    }

    @Test("the chapter track alone (chpl hidden)")
    func trackOnly() throws {
        let data = try AtomSurgery.rename(files.data(.m4b), ["moov", "udta", "chpl"], to: "free")
        let sources = try MP4ChapterReader.sources(in: data)
        #expect(sources.nero == nil)
        expectFixtureChapters(sources.quickTimeTrack)
        expectFixtureChapters(sources.preferred)
    }

    @Test("the chpl alone (tref hidden)")
    func neroOnly() throws {
        let data = try AtomSurgery.rename(files.data(.m4b), ["moov", "trak", "tref"], to: "free")
        let sources = try MP4ChapterReader.sources(in: data)
        #expect(sources.quickTimeTrack == nil)
        expectFixtureChapters(sources.nero)
        expectFixtureChapters(sources.preferred)
    }

    @Test("a chpl patched into a file made without chapters; ffprobe reads it too")
    func patchedNero() async throws {
        let entries: [(title: String, start100ns: UInt64)] = [
            ("Prologue", 0), ("Chapitre 2 — L’été", 123_456_789), ("日本語の章", 250_000_000),
        ]
        let data = try AtomSurgery.appendToUserData(files.data(.plain), MP4Bytes.chpl(entries))
        let url = files.directory.appendingPathComponent("patched-chpl.m4b")
        try data.write(to: url)

        let sources = try MP4ChapterReader.sources(of: url)
        #expect(sources.quickTimeTrack == nil)
        let duration = try #require(sources.duration)
        expectChapters(sources.nero, titles: entries.map(\.title),
                       starts: [.zero, .nanoseconds(12_345_678_900), .seconds(25)],
                       ends: [.nanoseconds(12_345_678_900), .seconds(25), duration])
        #expect(try MP4ChapterReader.chapters(of: url) == sources.nero)

        // The patched file is a valid MP4 with chapters for ffmpeg as well (its demuxer reads chpl).
        let probe = try await Subprocess.run("ffprobe", ["-v", "error", "-show_chapters", "-of", "csv=p=0", url.path])
        #expect(probe.status == 0)
        let lines = probe.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.last?.hasSuffix("日本語の章") == true)
    }

    @Test("when the lists disagree in count, the longer one wins")
    func disagreement() throws {
        let hidden = try AtomSurgery.rename(files.data(.m4b), ["moov", "udta", "chpl"], to: "free")

        let shorter = try AtomSurgery.appendToUserData(hidden, MP4Bytes.chpl([("Only", 0), ("Two", 100_000_000)]))
        let first = try MP4ChapterReader.sources(in: shorter)
        #expect(first.nero?.count == 2)
        expectFixtureChapters(first.preferred)

        let four: [(title: String, start100ns: UInt64)] = [("a", 0), ("b", 50_000_000), ("c", 100_000_000), ("d", 150_000_000)]
        let longer = try AtomSurgery.appendToUserData(hidden, MP4Bytes.chpl(four))
        let second = try MP4ChapterReader.sources(in: longer)
        #expect(second.quickTimeTrack?.count == 3)
        #expect(second.preferred.map(\.title) == ["a", "b", "c", "d"])
        #expect(second.preferred.last?.end == ChapterBook.duration)
    }
}
