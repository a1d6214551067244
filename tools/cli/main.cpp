#include <iostream>
int main() { std::cout << "memreplay\n"; }
