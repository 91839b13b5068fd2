// What the probes and the doctor read of an ELF file without loading it:
// its section table (every size checked against the file before anything
// is allocated or read, so a corrupt header cannot ask for gigabytes) and
// its dynamic section (the libraries it needs and where it asks the loader
// to look).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace cudabench::env {

template <typename T>
T elf_get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// `n` bytes at `off`; false when the file ends first.
bool read_at(std::ifstream& f, std::uint64_t off, char* buf, std::size_t n);

// A 64-bit little-endian ELF file's section table.
struct ElfSections {
  std::string table;
  std::uint16_t entsize = 0, count = 0, names_index = 0;
  std::uint64_t file_size = 0;
  // Section i's offset and size; returns its name's offset.
  std::uint32_t section(int i, std::uint64_t* off, std::uint64_t* size) const;
  std::uint32_t type(int i) const;  // sh_type
  std::uint32_t link(int i) const;  // sh_link
  bool fits(std::uint64_t off, std::uint64_t size) const { return off <= file_size && size <= file_size - off; }
};
// Reads the table; "" or why not (naming `path`).
std::string read_elf_sections(std::ifstream& f, const std::string& path, ElfSections* t);

// DT_NEEDED, DT_RPATH and DT_RUNPATH of a shared object (paths as written,
// $ORIGIN unexpanded).
struct ElfDynamic {
  std::string error;  // why it was not read ("" when read)
  std::vector<std::string> needed, rpath, runpath;
};
ElfDynamic read_elf_dynamic(const std::string& path);

}  // namespace cudabench::env
