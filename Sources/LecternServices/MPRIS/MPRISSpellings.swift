import LecternCore
import LecternLibrary

// The player's states and the library's orderings in MPRIS's words: the core says chapter and queue, MPRIS says
// Track and Playlist.

extension PlaybackStatus {
    /// MPRIS `PlaybackStatus`: "Playing", "Paused" or "Stopped".
    var mprisPlaybackStatus: String {
        switch self {
        case .playing: "Playing"
        case .paused: "Paused"
        case .stopped: "Stopped"
        }
    }
}

extension LoopMode {
    /// MPRIS `LoopStatus`: "None", "Track" (a track is a chapter) or "Playlist" (the whole queue).
    var mprisLoopStatus: String {
        switch self {
        case .none: "None"
        case .chapter: "Track"
        case .queue: "Playlist"
        }
    }

    /// The mode an MPRIS `LoopStatus` names; nil for any other string.
    init?(mprisLoopStatus: String) {
        guard let mode = Self.allCases.first(where: { $0.mprisLoopStatus == mprisLoopStatus }) else { return nil }
        self = mode
    }
}
