// The pickle opcodes (as CPython's Lib/pickle.py names them) and their names for error messages:
// shared by the unpickler (pickle_reader.cpp) and the scalar decoding of its tree
// (pickle_tree.cpp). Internal to recorder/import.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace memreplay::pickle {

// Opcode bytes, named as in CPython's Lib/pickle.py.
enum Op : uint8_t {
  MARK = '(',
  STOP = '.',
  POP = '0',
  POP_MARK = '1',
  DUP = '2',
  FLOAT = 'F',
  INT = 'I',
  BININT = 'J',
  BININT1 = 'K',
  LONG = 'L',
  BININT2 = 'M',
  NONE = 'N',
  PERSID = 'P',
  BINPERSID = 'Q',
  REDUCE = 'R',
  STRING = 'S',
  BINSTRING = 'T',
  SHORT_BINSTRING = 'U',
  UNICODE = 'V',
  BINUNICODE = 'X',
  APPEND = 'a',
  BUILD = 'b',
  GLOBAL = 'c',
  DICT = 'd',
  EMPTY_DICT = '}',
  APPENDS = 'e',
  GET = 'g',
  BINGET = 'h',
  INST = 'i',
  LONG_BINGET = 'j',
  LIST = 'l',
  EMPTY_LIST = ']',
  OBJ = 'o',
  PUT = 'p',
  BINPUT = 'q',
  LONG_BINPUT = 'r',
  SETITEM = 's',
  TUPLE = 't',
  EMPTY_TUPLE = ')',
  SETITEMS = 'u',
  BINFLOAT = 'G',
  SHORT_BINBYTES = 'C',
  BINBYTES = 'B',
  PROTO = 0x80,
  NEWOBJ = 0x81,
  EXT1 = 0x82,
  EXT2 = 0x83,
  EXT4 = 0x84,
  TUPLE1 = 0x85,
  TUPLE2 = 0x86,
  TUPLE3 = 0x87,
  NEWTRUE = 0x88,
  NEWFALSE = 0x89,
  LONG1 = 0x8a,
  LONG4 = 0x8b,
  SHORT_BINUNICODE = 0x8c,
  BINUNICODE8 = 0x8d,
  BINBYTES8 = 0x8e,
  EMPTY_SET = 0x8f,
  ADDITEMS = 0x90,
  FROZENSET = 0x91,
  NEWOBJ_EX = 0x92,
  STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94,
  FRAME = 0x95,
  BYTEARRAY8 = 0x96,
  NEXT_BUFFER = 0x97,
  READONLY_BUFFER = 0x98,
};

inline constexpr std::array<const char*, 256> make_op_names() {
  std::array<const char*, 256> n{};
  n[MARK] = "MARK";
  n[STOP] = "STOP";
  n[POP] = "POP";
  n[POP_MARK] = "POP_MARK";
  n[DUP] = "DUP";
  n[FLOAT] = "FLOAT";
  n[INT] = "INT";
  n[BININT] = "BININT";
  n[BININT1] = "BININT1";
  n[LONG] = "LONG";
  n[BININT2] = "BININT2";
  n[NONE] = "NONE";
  n[PERSID] = "PERSID";
  n[BINPERSID] = "BINPERSID";
  n[REDUCE] = "REDUCE";
  n[STRING] = "STRING";
  n[BINSTRING] = "BINSTRING";
  n[SHORT_BINSTRING] = "SHORT_BINSTRING";
  n[UNICODE] = "UNICODE";
  n[BINUNICODE] = "BINUNICODE";
  n[APPEND] = "APPEND";
  n[BUILD] = "BUILD";
  n[GLOBAL] = "GLOBAL";
  n[DICT] = "DICT";
  n[EMPTY_DICT] = "EMPTY_DICT";
  n[APPENDS] = "APPENDS";
  n[GET] = "GET";
  n[BINGET] = "BINGET";
  n[INST] = "INST";
  n[LONG_BINGET] = "LONG_BINGET";
  n[LIST] = "LIST";
  n[EMPTY_LIST] = "EMPTY_LIST";
  n[OBJ] = "OBJ";
  n[PUT] = "PUT";
  n[BINPUT] = "BINPUT";
  n[LONG_BINPUT] = "LONG_BINPUT";
  n[SETITEM] = "SETITEM";
  n[TUPLE] = "TUPLE";
  n[EMPTY_TUPLE] = "EMPTY_TUPLE";
  n[SETITEMS] = "SETITEMS";
  n[BINFLOAT] = "BINFLOAT";
  n[SHORT_BINBYTES] = "SHORT_BINBYTES";
  n[BINBYTES] = "BINBYTES";
  n[PROTO] = "PROTO";
  n[NEWOBJ] = "NEWOBJ";
  n[EXT1] = "EXT1";
  n[EXT2] = "EXT2";
  n[EXT4] = "EXT4";
  n[TUPLE1] = "TUPLE1";
  n[TUPLE2] = "TUPLE2";
  n[TUPLE3] = "TUPLE3";
  n[NEWTRUE] = "NEWTRUE";
  n[NEWFALSE] = "NEWFALSE";
  n[LONG1] = "LONG1";
  n[LONG4] = "LONG4";
  n[SHORT_BINUNICODE] = "SHORT_BINUNICODE";
  n[BINUNICODE8] = "BINUNICODE8";
  n[BINBYTES8] = "BINBYTES8";
  n[EMPTY_SET] = "EMPTY_SET";
  n[ADDITEMS] = "ADDITEMS";
  n[FROZENSET] = "FROZENSET";
  n[NEWOBJ_EX] = "NEWOBJ_EX";
  n[STACK_GLOBAL] = "STACK_GLOBAL";
  n[MEMOIZE] = "MEMOIZE";
  n[FRAME] = "FRAME";
  n[BYTEARRAY8] = "BYTEARRAY8";
  n[NEXT_BUFFER] = "NEXT_BUFFER";
  n[READONLY_BUFFER] = "READONLY_BUFFER";
  return n;
}
inline constexpr std::array<const char*, 256> kOpNames = make_op_names();

// "NAME (0xhh)", or the hex byte alone for an opcode pickle does not have.
inline std::string op_label(uint8_t op) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex = {'0', 'x', kHex[op >> 4], kHex[op & 15]};
  return kOpNames[op] ? std::string(kOpNames[op]) + " (" + hex + ")" : hex;
}

}  // namespace memreplay::pickle
