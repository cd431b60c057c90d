import DBus

/// MPRIS's Player properties (GetAll), what `lectern status` shows of the player.
public struct PlayerStatus: ReplyDecodable {
    /// "Playing", "Paused" or "Stopped".
    public var playbackStatus: String
    public var track: Track
    /// µs into the track.
    public var position: Int64
    public var volume: Double
    public var rate: Double
    /// "None", "Track" or "Playlist".
    public var loopStatus: String
    public var shuffle: Bool

    public init(_ reader: inout ReplyReader) throws {
        playbackStatus = try reader.read("PlaybackStatus") ?? "Stopped"
        track = try reader.dictionary("Metadata") ?? Track()
        position = try reader.read("Position") ?? 0
        volume = try reader.read("Volume") ?? 1
        rate = try reader.read("Rate") ?? 1
        loopStatus = try reader.read("LoopStatus") ?? "None"
        shuffle = try reader.read("Shuffle") ?? false
    }
}

/// The current track's MPRIS Metadata (a track is a chapter, or a file without chapters); all nil without one.
public struct Track: ReplyDecodable {
    /// `mpris:trackid`: what SetPosition names the track by.
    public var id: ObjectPath?
    /// µs.
    public var length: Int64?
    public var title: String?
    public var artists: [String] = []
    public var album: String?
    public var url: String?
    /// The words heard in the chapter (its lyrics or transcript), when it has them.
    public var text: String?

    public init() {}

    public init(_ reader: inout ReplyReader) throws {
        id = try reader.read("mpris:trackid")
        length = try reader.read("mpris:length")
        title = try reader.read("xesam:title")
        artists = try reader.read("xesam:artist") ?? []
        album = try reader.read("xesam:album")
        url = try reader.read("xesam:url")
        text = try reader.read("xesam:asText")
    }
}

/// What the client reads of MPRIS's Player interface.
public struct MPRISPlayer: Sendable {
    public let status = Decoding<PlayerStatus>(.properties(.mprisPlayer)) { try PlayerStatus(&$0) }
    public let metadata = Decoding<Track>(.property(.mprisPlayer, name: "Metadata")) { try $0.dictionary("Metadata") ?? Track() }
    public let volume = Decoding<Double>.property(.mprisPlayer, "Volume")
}
