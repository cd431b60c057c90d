import Foundation
import MP4
import Testing
import TestSupport

@Suite("MP4 series tags")
struct SeriesTagsTests {
    typealias B = MP4Bytes

    /// Files ffmpeg makes and mutagen tags, as taggers do: the items as written.
    @Test(arguments: SeriesTags.names(["m4b"]))
    func itemsOfATaggedFile(_ name: String) async throws {
        let tagged = SeriesTags.named(name)
        let folder = try TemporaryDirectory(prefix: "lectern-mp4-series")
        defer { folder.remove() }
        let file = try await offThePool { try SeriesTags.file(tagged, in: folder.url) }
        let tags = try MP4SeriesTags.read(of: file)
        let expected: [String: MP4SeriesTags] = [
            "MP4 freeform": MP4SeriesTags(series: "Discworld", seriesPart: "2.5"),
            "MP4 movement": MP4SeriesTags(movementName: "Mistborn", movementNumber: 2),
            "MP4 freeform wins over the movement": MP4SeriesTags(series: "Discworld", seriesPart: "0", movementName: "Mistborn",
                                                                 movementNumber: 2),
            "MP4 none": MP4SeriesTags(),
        ]
        #expect(tags == expected[name])
        #expect(try MP4SeriesTags.read(in: Data(contentsOf: file)) == tags)
    }

    /// An `ilst` item of type `type` (its first byte 0xA9 for "©") holding `children`.
    static func item(_ type: [UInt8], _ children: [UInt8]) -> [UInt8] {
        B.u32(UInt32(8 + children.count)) + type + children
    }

    static func data(_ type: UInt32, _ value: [UInt8]) -> [UInt8] {
        B.atom("data", B.u32(type) + B.u32(0) + value)
    }

    static func file(meta: [UInt8]) -> Data {
        Data(B.ftyp + B.atom("moov", B.atom("udta", meta)) + B.atom("mdat", [0, 0, 0, 0]))
    }

    static let handler = B.full("hdlr", B.u32(0) + Array("mdirappl".utf8) + [UInt8](repeating: 0, count: 9))
    static let movementName: [UInt8] = [0xA9] + Array("mvn".utf8)
    static let movementNumber: [UInt8] = [0xA9] + Array("mvi".utf8)

    @Test("ISO's meta (a full atom) and QuickTime's (none); a cover larger than any of these items is not read")
    func bothLayouts() throws {
        let items = Self.item(Array("covr".utf8), Self.data(13, [UInt8](repeating: 0xFF, count: 100_000)))
            + Self.item(Self.movementName, Self.data(1, Array("Mistborn".utf8)))
            + Self.item(Self.movementNumber, Self.data(21, [0xFF, 0xFE]))
        let iso = Self.file(meta: B.full("meta", Self.handler + B.atom("ilst", items)))
        let quickTime = Self.file(meta: B.atom("meta", Self.handler + B.atom("ilst", items)))
        for file in [iso, quickTime] {
            #expect(try MP4SeriesTags.read(in: file) == MP4SeriesTags(movementName: "Mistborn", movementNumber: -2))
        }
    }

    @Test("a freeform item of another mean, a damaged item, a number of another type: not read; the rest is")
    func damage() throws {
        func freeform(_ mean: String, _ name: String, _ value: String) -> [UInt8] {
            Self.item(Array("----".utf8), B.full("mean", Array(mean.utf8)) + B.full("name", Array(name.utf8))
                      + Self.data(1, Array(value.utf8)))
        }
        let items = freeform("org.example", "SERIES", "Elsewhere")
            + Self.item(Self.movementName, B.atom("data", [0, 0, 0]))  // cut short
            + Self.item(Self.movementNumber, Self.data(1, Array("2".utf8)))
            + freeform("com.apple.iTunes", "SERIES-PART", "2.5")
        let file = Self.file(meta: B.full("meta", Self.handler + B.atom("ilst", items)))
        #expect(try MP4SeriesTags.read(in: file) == MP4SeriesTags(seriesPart: "2.5"))
        #expect(try MP4SeriesTags.read(in: Self.file(meta: B.full("meta", Self.handler))) == MP4SeriesTags())
        #expect(throws: MP4Error.self) { try MP4SeriesTags.read(in: Data("not an MP4 file at all".utf8)) }
    }
}
