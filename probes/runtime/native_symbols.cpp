#include "native_symbols.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace ddpscope::probes {
namespace {

constexpr size_t kMaxText = 200;

std::string bounded(std::string text) {
  if (text.size() > kMaxText) text = text.substr(0, kMaxText - 3) + "...";
  return text;
}

// The function's C++ name; a symbol's version ("clock_nanosleep@GLIBC_2.2.5") is left out.
std::string demangled(const char* symbol) {
  const std::string plain(symbol, std::strcspn(symbol, "@"));
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(plain.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : plain;
}

// An inlined function's name, from its abstract origin: the linkage name demangled where
// there is one (it carries the namespaces), else the plain name.
std::string inlined_name(Dwarf_Die* scope) {
  Dwarf_Attribute attr;
  for (int name : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name})
    if (dwarf_attr_integrate(scope, name, &attr))
      if (const char* text = dwarf_formstring(&attr)) return demangled(text);
  if (dwarf_attr_integrate(scope, DW_AT_name, &attr))
    if (const char* text = dwarf_formstring(&attr)) return text;
  return "??";
}

// Where the enclosing function called the inlined one: its call file and line.
void call_site(Dwarf_Die* cu, Dwarf_Die* scope, std::string& file, int64_t& line) {
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  Dwarf_Files* files = nullptr;
  size_t count = 0;
  if (dwarf_attr(scope, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &value) == 0 &&
      dwarf_getsrcfiles(cu, &files, &count) == 0 && value < count)
    if (const char* name = dwarf_filesrc(files, value, nullptr, nullptr)) file = name;
  value = 0;
  line = dwarf_attr(scope, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &value) == 0 ? static_cast<int64_t>(value)
                                                                                          : 0;
}

}  // namespace

NativeSymbols::NativeSymbols() {
  static char* debuginfo_path = nullptr;
  static const Dwfl_Callbacks callbacks = {dwfl_linux_proc_find_elf, dwfl_standard_find_debuginfo, nullptr,
                                           &debuginfo_path};
  dwfl_ = dwfl_begin(&callbacks);
  if (dwfl_ && (dwfl_linux_proc_report(dwfl_, getpid()) != 0 || dwfl_report_end(dwfl_, nullptr, nullptr) != 0)) {
    dwfl_end(dwfl_);
    dwfl_ = nullptr;
  }
}

NativeSymbols::~NativeSymbols() {
  if (dwfl_) dwfl_end(dwfl_);
}

std::vector<NativeFrame> NativeSymbols::frames_at(uintptr_t address, bool return_address) const {
  NativeFrame outer{"??", "", 0};
  Dwfl_Module* module = nullptr;
  const Dwarf_Addr pc = return_address ? address - 1 : address;
  if (dwfl_) module = dwfl_addrmodule(dwfl_, pc);
  if (!module) return {outer};
  if (const char* symbol = dwfl_module_addrname(module, pc)) outer.function = bounded(demangled(symbol));
  if (Dwfl_Line* line = dwfl_module_getsrc(module, pc)) {
    int number = 0;
    if (const char* source = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr)) {
      outer.file = source;
      outer.line = number;
    }
  }
  std::vector<NativeFrame> out;
  // The line table's place belongs to the innermost inlined function; each inlined call's
  // site is its caller's place (scopes come innermost first).
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(module, pc, &bias);
  Dwarf_Die* scopes = nullptr;
  const int count = cu && !outer.file.empty() ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
  std::string file = outer.file;
  int64_t line = outer.line;
  for (int i = 0; i < count; ++i) {
    if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
    out.push_back({bounded(inlined_name(&scopes[i])), bounded(file), line});
    call_site(cu, &scopes[i], file, line);
  }
  std::free(scopes);
  outer.file = file;
  outer.line = line;
  if (outer.file.empty()) {  // no line tables: the module's path
    const char* main_file = nullptr;
    const char* name = dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, nullptr);
    outer.file = main_file ? main_file : name ? name : "";
  }
  outer.file = bounded(outer.file);
  out.push_back(std::move(outer));
  return out;
}

}  // namespace ddpscope::probes
