// Annotated byte vectors for every message (protocol.md §10 "Examples" shows the same
// bytes). Each line: hex bytes, then `#` and what they encode. Generated once from an
// independent re-implementation of the layouts in protocol.md, then pasted here;
// `ByteVectorTests` checks that the Swift encoder and parser agree with them.
enum Vectors {
    static let hello = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        01                                               # type 0x01 Hello
        00 00                                            # flags
        00 00 00 19                                      # payload length 25
        01                                               # minVersion 1
        01                                               # maxVersion 1
        00 00 00 07                                      # capabilities resume|dropReports|serverCommands
        05 63 61 6D 2D 61                                # agentID "cam-a"
        00 09 61 67 65 6E 74 2F 31 2E 30                 # softwareVersion "agent/1.0"
        00 00                                            # bearerToken (absent)
        """
    static let helloReply = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        02                                               # type 0x02 HelloReply
        00 00                                            # flags
        00 00 00 2F                                      # payload length 47
        01                                               # version 1
        00 00 00 07                                      # capabilities
        05 72 65 63 2D 31                                # serverID "rec-1"
        00 0A 73 65 72 76 65 72 2F 31 2E 30              # softwareVersion "server/1.0"
        00 80 00 00                                      # maxFramePayload 8388608
        10                                               # maxTracksPerSession 16
        20                                               # maxLabels 32
        04 00                                            # maxStringBytes 1024
        00 01 00 00                                      # maxCodecConfigBytes 65536
        00 00 13 88                                      # heartbeatIntervalMillis 5000
        00 00 4E 20                                      # idleTimeoutMillis 20000
        00 04 93 E0                                      # resumeWindowMillis 300000
        """
    static let heartbeat = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        03                                               # type 0x03 Heartbeat
        00 00                                            # flags
        00 00 00 10                                      # payload length 16
        00 00 00 00 00 00 00 01                          # nonce 1
        00 00 00 00 3B 9A CA 00                          # originTime 1000000000 ns
        """
    static let heartbeatReply = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        04                                               # type 0x04 HeartbeatReply
        00 00                                            # flags
        00 00 00 20                                      # payload length 32
        00 00 00 00 00 00 00 01                          # nonce 1
        00 00 00 00 3B 9A CA 00                          # originTime (t1) 1000000000
        00 00 00 00 59 68 2F 00                          # receiveTime (t2) 1500000000
        00 00 00 00 59 69 B5 A0                          # transmitTime (t3) 1500100000
        """
    static let error = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        05                                               # type 0x05 Error
        00 00                                            # flags
        00 00 00 0C                                      # payload length 12
        00 33                                            # code 0x0033 unknownTrack
        01                                               # scope 1 session
        00 07 74 72 61 63 6B 20 39                       # message "track 9"
        """
    static let sessionOpen = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        10                                               # type 0x10 SessionOpen
        00 00                                            # flags
        00 00 00 65                                      # payload length 101
        02 73 31                                         # sessionID "s1"
        01                                               # label count 1
        04 72 6F 6F 6D                                   #   key "room"
        00 01 61                                         #   value "a"
        02                                               # track count 2
        01                                               # track 1: id 1
        01                                               #   kind 1 video
        01                                               #   codec 1 H.264
        07 80                                            #   width 1920
        04 38                                            #   height 1080
        00 00                                            #   rotation 0
        00 00 00 00                                      #   sampleRate 0
        00                                               #   channels 0
        00 01 5F 90                                      #   timescale 90000
        00 04 63 61 6D 30                                #   label "cam0"
        00 00 00 0E                                      #   codecConfig length 14
        01                                               #     SPS count 1
        00 04 67 42 00 1F                                #     SPS length 4, NAL 67 42 00 1F
        01                                               #     PPS count 1
        00 04 68 CE 3C 80                                #     PPS length 4, NAL 68 CE 3C 80
        02                                               # track 2: id 2
        02                                               #   kind 2 audio
        02                                               #   codec 2 Opus
        00 00                                            #   width 0
        00 00                                            #   height 0
        00 00                                            #   rotation 0
        00 00 BB 80                                      #   sampleRate 48000
        01                                               #   channels 1
        00 00 BB 80                                      #   timescale 48000
        00 03 6D 69 63                                   #   label "mic"
        00 00 00 13                                      #   codecConfig length 19
        4F 70 75 73 48 65 61 64                          #     "OpusHead"
        01 01                                            #     version 1, channels 1
        38 01                                            #     pre-skip 312 (LE)
        80 BB 00 00                                      #     input rate 48000 (LE)
        00 00 00                                         #     gain 0, mapping family 0
        """
    static let sessionResume = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        11                                               # type 0x11 SessionResume
        00 00                                            # flags
        00 00 00 0B                                      # payload length 11
        02 73 31                                         # sessionID "s1"
        00 00 00 00 00 00 00 29                          # lastAcknowledged 41
        """
    static let sessionAccepted = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        12                                               # type 0x12 SessionAccepted
        00 00                                            # flags
        00 00 00 0B                                      # payload length 11
        02 73 31                                         # sessionID "s1"
        00 00 00 00 00 00 00 28                          # acknowledged 40
        """
    static let sessionClose = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        13                                               # type 0x13 SessionClose
        00 00                                            # flags
        00 00 00 0B                                      # payload length 11
        02 73 31                                         # sessionID "s1"
        00 00 00 00 00 00 00 2A                          # finalSequence 42
        """
    static let sessionCancel = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        14                                               # type 0x14 SessionCancel
        00 00                                            # flags
        00 00 00 0D                                      # payload length 13
        02 73 31                                         # sessionID "s1"
        00 08 6F 70 65 72 61 74 6F 72                    # reason "operator"
        """
    static let sessionClosed = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        15                                               # type 0x15 SessionClosed
        00 00                                            # flags
        00 00 00 0C                                      # payload length 12
        02 73 31                                         # sessionID "s1"
        01                                               # outcome 1 finalized
        00 00 00 00 00 00 00 2A                          # durableSequence 42
        """
    static let sample = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        20                                               # type 0x20 Sample
        00 00                                            # flags
        00 00 00 28                                      # payload length 40
        01                                               # track 1
        01                                               # flags keyframe
        00 00 00 00 00 00 00 01                          # sequence 1
        00 00 00 00 3B 9A CA 00                          # pts 1000000000 ns
        00 00 00 00 3B 9A CA 00                          # dts 1000000000 ns
        00 00 00 00 01 FC A0 55                          # duration 33333333 ns
        00 00 00 02 65 88                                # data: NAL length 2, IDR slice 65 88
        """
    static let ack = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        21                                               # type 0x21 Ack
        00 00                                            # flags
        00 00 00 0B                                      # payload length 11
        02 73 31                                         # sessionID "s1"
        00 00 00 00 00 00 00 01                          # sequence 1
        """
    static let remoteAck = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        24                                               # type 0x24 RemoteAck
        00 00                                            # flags
        00 00 00 0B                                      # payload length 11
        02 73 31                                         # sessionID "s1"
        00 00 00 00 00 00 00 01                          # sequence 1
        """
    static let trackEnd = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        22                                               # type 0x22 TrackEnd
        00 00                                            # flags
        00 00 00 04                                      # payload length 4
        02                                               # track 2
        01                                               # reason 1 endOfStream
        00 00                                            # message ""
        """
    static let dropReport = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        23                                               # type 0x23 DropReport
        00 00                                            # flags
        00 00 00 06                                      # payload length 6
        01                                               # track 1
        01                                               # reason 1 queueOverflow
        00 00 00 03                                      # count 3
        """
    static let startSession = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        30                                               # type 0x30 StartSession
        00 00                                            # flags
        00 00 00 09                                      # payload length 9
        01                                               # label count 1
        04 74 61 6B 65                                   #   key "take"
        00 01 37                                         #   value "7"
        """
    static let scheduledStartSession = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        30                                               # type 0x30 StartSession
        00 00                                            # flags
        00 00 00 09                                      # payload length 9
        00                                               # label count 0
        00 00 00 02 54 0B E4 00                          # startAt 10 000 000 000 ns
        """
    static let scheduledStopSession = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        31                                               # type 0x31 StopSession
        00 00                                            # flags
        00 00 00 0B                                      # payload length 11
        02 73 31                                         # sessionID "s1"
        00 00 00 02 54 0B E4 00                          # stopAt 10 000 000 000 ns
        """
    static let stopSession = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        31                                               # type 0x31 StopSession
        00 00                                            # flags
        00 00 00 03                                      # payload length 3
        02 73 31                                         # sessionID "s1"
        """
    static let cancelSession = """
        4D 43 52 50                                      # magic "MCRP"
        01                                               # version 1
        32                                               # type 0x32 CancelSession
        00 00                                            # flags
        00 00 00 09                                      # payload length 9
        02 73 31                                         # sessionID "s1"
        00 04 64 69 73 6B                                # reason "disk"
        """
}
